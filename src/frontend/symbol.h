// What a name or an expression denotes while a kernel is being lowered:
// an IR value (scalar or tile), a compile-time constant, a module, a builtin
// function, a @jit function, a tuple of symbols, a method bound to a value,
// or a block pointer / tensor descriptor (see builtins_block_ptr.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/const_value.h"
#include "ir/ir.h"

namespace tegula::ast {
struct Expr;
}

namespace tegula::frontend {

// The compile-time part of a block pointer or a tensor descriptor; its
// runtime parts (base, shape, strides, offsets) are the symbol's elements.
struct BlockAccess {
  std::vector<int64_t> block_shape;
  std::vector<int64_t> order;  // block pointers: tl.make_block_ptr's `order` (a layout hint)
  std::string padding;         // tensor descriptors: "zero" or "nan"
  // A block of a tensor descriptor at given offsets (desc.load, desc.store):
  // its load or store is one desc_load / desc_store op, not the expansion.
  bool descriptor_block = false;
};

struct LambdaClosure;

struct Symbol {
  enum class Kind {
    Value,        // value
    Const,        // constant
    Module,       // name = module path: "language", "language.math", "tegula"
    Builtin,      // name = builtin name, e.g. "load", "range", "min"
    JitFunction,  // function = index into KernelRequest::functions
    Tuple,        // elements
    Method,       // name = method, receiver = the value it is bound to; an aggregate's method has
                  // elements[0], the function to call with the receiver first
    Opaque,       // name = description of a host object the kernel cannot use
    HostModule,   // name = the dotted global name of a host Python module ("helpers"); function =
                  // the FunctionSource whose globals hold its members ("helpers.f")
    Slice,        // lo:hi:step in a subscript; elements = the three parts (None where absent)
    BlockPointer,      // elements = base, shape[r], strides[r], offsets[r] (IR values); block
    TensorDescriptor,  // elements = base, shape[r], strides[r] (IR values); block
    HostFunction,      // a @constexpr_function: name = its reference (KernelRequest::call_host)
    NamedTupleType,    // a named tuple class: name = "Name:field,..."; elements = the last fields' defaults
    AggregateType,     // an @aggregate class: name and elements as GlobalValue::Kind::AggregateType's
    Aggregate,         // an instance of one: elements = its fields' values; receiver = its class
    Lambda,            // a `lambda` written in the kernel: closure
  };
  Kind kind = Kind::Const;
  ir::ValueId value;
  ConstValue constant;
  std::string name;
  int32_t function = -1;
  std::vector<Symbol> elements;
  bool written_as_list = false;  // Tuple: built from a `[...]` literal (only its text, str(), differs)
  // Const (a number): one Triton holds as a tensor: bound by a plain
  // assignment, computed from such a number, or returned under an `if` whose
  // condition is one (Triton's `if` is then a runtime one). `.type` is then
  // the dtype it would have (int32, fp32, ...), not its constexpr_type.
  // Nothing else reads it: the value stays a constant and folds.
  bool assigned = false;
  // HostFunction: one of Triton's builtins, called with stand-ins for the
  // arguments that have no host value (GlobalValue::Kind::StandIn).
  bool takes_stand_ins = false;
  std::shared_ptr<Symbol> receiver;
  std::shared_ptr<const BlockAccess> block;
  std::shared_ptr<const LambdaClosure> closure;

  static Symbol of(ir::ValueId v) { Symbol s; s.kind = Kind::Value; s.value = v; return s; }
  static Symbol of(ConstValue c) { Symbol s; s.kind = Kind::Const; s.constant = std::move(c); return s; }
  static Symbol module(std::string path) { Symbol s; s.kind = Kind::Module; s.name = std::move(path); return s; }
  static Symbol builtin(std::string n) { Symbol s; s.kind = Kind::Builtin; s.name = std::move(n); return s; }
  static Symbol jit(int32_t f) { Symbol s; s.kind = Kind::JitFunction; s.function = f; return s; }
  static Symbol tuple(std::vector<Symbol> e) { Symbol s; s.kind = Kind::Tuple; s.elements = std::move(e); return s; }
  static Symbol opaque(std::string d) { Symbol s; s.kind = Kind::Opaque; s.name = std::move(d); return s; }
  static Symbol host_module(std::string global, int32_t f) {
    Symbol s;
    s.kind = Kind::HostModule;
    s.name = std::move(global);
    s.function = f;
    return s;
  }

  bool is_value() const { return kind == Kind::Value; }
  bool is_const() const { return kind == Kind::Const; }
  bool is_none() const { return kind == Kind::Const && constant.kind == ConstValue::Kind::None; }

  // The numbers in this value, through its tuples, become what Triton makes
  // tensors of (see `assigned`), or constexprs again.
  Symbol& mark_assigned(bool on = true) {
    if (kind == Kind::Const && constant.is_numeric()) assigned = on;
    if (kind == Kind::Tuple)
      for (Symbol& e : elements) e.mark_assigned(on);
    return *this;
  }
};

// What a `lambda` captured where it was written: as in Triton, only compile-time values of the
// enclosing function's names (the rest it reads are the function's globals, looked up when it is called).
struct LambdaClosure {
  const ast::Expr* node = nullptr;  // the Lambda expression (the kernel's ASTs outlive the lowering)
  int32_t function = -1;            // the @jit function it was written in: whose globals it reads
  std::map<std::string, Symbol> captured;
  std::vector<std::optional<Symbol>> defaults;  // per parameter, evaluated where the lambda was written
};

}  // namespace tegula::frontend
