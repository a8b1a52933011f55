// What the Python side (or the CLI) hands the compiler: the kernel's source,
// the globals it can see, and how the launch arguments specialize it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/type.h"

namespace tegula::frontend {

// A global name visible to a kernel, resolved on the host side.
struct GlobalValue {
  enum class Kind {
    Int,          // int_value
    Float,        // float_value
    Bool,         // int_value 0/1
    None,
    Str,          // text
    DType,        // text holds the Tegula dtype name ("float32", "bfloat16", ...)
    Language,     // the tile language module (`tegula.language` or `triton.language`);
                  // text holds the module path so `tl.math` etc. resolve
    Tegula,       // the top-level `tegula` / `triton` module (cdiv, next_power_of_2, jit)
    JitFunction,  // function holds an index into KernelRequest::functions
    Opaque,       // something else (a NumPy module, a class...): text is a description for errors
    LanguageMember,  // a function of the tile language bound to a global of its own (`from
                     // triton.language.extra.libdevice import rsqrt as r`): text holds where the
                     // language exports it ("triton.language.extra.libdevice.rsqrt"), so it means
                     // what that attribute of the module means
    Tuple,        // elements, each a constant (a constexpr argument such as a shape); text: a named
                  // tuple's fields, comma-separated ("" for a plain tuple)
    HostModule,   // a Python module of the host's (`from . import helpers`): text describes it for
                  // errors; each of its attributes the function names (`helpers.f`) is a global
                  // of its own, under the dotted name ("helpers.f"), a HostModule again for a
                  // module inside it
    NamedTupleType,     // a named tuple class (typing.NamedTuple, collections.namedtuple): text is
                        // "Name:field,field,..."; elements the defaults of the last fields
    ConstexprFunction,  // a host function the kernel may call on constants (@constexpr_function):
                        // text is its reference for KernelRequest::call_host, elements[0] its source
                        // (a Str: what the cache key sees of it); elements[1], where present, a Bool:
                        // true for one of Triton's builtins (__triton_builtin__), which is given
                        // StandIns for the arguments that have no host value
    AggregateType,  // an @aggregate class: text is "Qualname@module:field,field,..."; elements are four
                    // Tuples: [0] the fields' defaults (text: their names, comma-separated), [1] the
                    // class's members (text: their names, a static method's with a leading '@'; each a
                    // JitFunction for a function, a constant...), [2] (text only) the constexpr fields,
                    // [3] (text only) its aggregate base classes ("Qualname@module", comma-separated)
    StandIn,  // a kernel value with no host form (a tile, a scalar known at run time, a tensor
              // descriptor), given to a constexpr function in its place; returned, it means that value.
              // int_value: its index among the call's stand-ins; text: its dtype's tl name, after "*"
              // for a pointer and "desc:" for a descriptor; elements: its shape or block shape (Ints)
  };
  Kind kind = Kind::None;
  int64_t int_value = 0;
  double float_value = 0.0;
  std::string text;
  int32_t function = -1;
  std::vector<GlobalValue> elements;  // Tuple
};

// One `@jit` function's source. functions[0] of a request is the kernel.
struct FunctionSource {
  std::string name;
  std::string filename;
  std::string source;      // as inspect.getsource returns it (may be indented)
  int32_t first_line = 1;  // line of `source`'s first line in `filename`
  std::map<std::string, GlobalValue> globals;  // names the function's body uses
  // @must_use_result: calling it as a statement (its result dropped) is an
  // error; "" = not marked, else the note the error adds ("" words: " ").
  std::string must_use_result;
};

// How one kernel parameter is bound at this launch.
struct ArgSpec {
  enum class Kind {
    Pointer,    // dtype = pointee; divisibility = 16 when the address is 16-byte aligned
    Int,        // dtype = i32 or i64 (or u64 for values above INT64_MAX), or the parameter's declared
                //   integer type (an annotation such as tl.uint8, a compiled signature); divisibility
                //   16 or 1; is_one: the value is 1 and is specialized as a constant (see typed_one)
    Float,      // dtype = f32, or the parameter's declared float type (f16, bf16, f64, fp8)
    Bool,       // dtype = i1
    Constexpr,  // value holds the compile-time constant
    TensorDescriptor,  // a host TensorDescriptor: dtype and divisibility are its base pointer's;
                       //   parts = the Int specs of its shape then its strides; block_shape;
                       //   value = the padding option (Str "zero" or "nan"). The kernel gets one
                       //   parameter per piece: NAME__base, NAME__shape<d>, NAME__stride<d>.
    Tuple,      // a tuple (or named tuple) of runtime values: parts = one spec per element, each of any
                //   kind (constexprs, nested tuples); the kernel gets the parameters of element i as
                //   NAME__i (a nested one's as NAME__i__j), none for constexpr elements.
                //   value: Str, a named tuple's field names comma-separated ("" for a tuple).
  };
  Kind kind = Kind::Int;
  ir::Scalar dtype = ir::Scalar::I32;
  int64_t divisibility = 1;
  bool is_one = false;
  GlobalValue value;
  std::vector<ArgSpec> parts;        // TensorDescriptor: its shape and strides; Tuple: its elements
  std::vector<int64_t> block_shape;  // TensorDescriptor only
  // Int with is_one, of a parameter whose type is declared (s: tl.int64): the 1 is a value of dtype,
  // so the kernel computes in that type as it would with any other value; without it the 1 is
  // Python's untyped constant (Triton's specialization of an unannotated int).
  bool typed_one = false;
  // Pointer only: a host TMA descriptor of Triton 3.2/3.3 (Triton's "nvTmaDesc"), this many bytes in host
  // memory that the launch passes by value; the kernel reads them through the pointer. 0 for any other
  // argument.
  int64_t by_value_bytes = 0;
};

// Names the kernel parameters of tuple and aggregate elements: PARENT__i, with '_' appended while a
// parameter already has that name (`def k(t, t__0)`). The front end and the launcher's check of a
// compiled kernel's parameters name them through it, visiting elements in the same order.
class ElementParamNames {
 public:
  explicit ElementParamNames(const std::vector<std::string>& kernel_params)
      : taken_(kernel_params.begin(), kernel_params.end()) {}
  std::string operator()(const std::string& parent, size_t i) {
    std::string name = parent + "__" + std::to_string(i);
    while (taken_.count(name) != 0) name += "_";
    taken_.insert(name);
    return name;
  }

 private:
  std::set<std::string> taken_;
};

// What kernels may ask of the target they are compiled for, at compile time
// (tl.target_info): the CUDA architecture (compute capability * 10, the
// backend's Target::arch()), 0 for a host backend and for tools that lower
// without a backend. The front end never names backends.
struct TargetInfo {
  int cuda_arch = 0;
};

// Runs a host function on constants (a @constexpr_function): (its reference,
// positional arguments, keyword arguments) -> its result. Throws
// HostCallError with the message to report when the function raised or
// returned what a kernel cannot use.
using HostCall = std::function<GlobalValue(const std::string& reference, const std::vector<GlobalValue>& args,
                                           const std::vector<std::pair<std::string, GlobalValue>>& keywords)>;

struct HostCallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KernelRequest {
  std::vector<FunctionSource> functions;  // [0] is the kernel
  std::vector<ArgSpec> args;              // one per kernel parameter, in order
  bool debug = false;
  std::string name;  // the compiled kernel's name where it is not its function's (Triton's
                     // @jit(repr=...)); empty: the `def`'s name
  int num_warps = 4;  // the launch's: tl.extra.cuda.num_warps() and num_threads() are constants of it
  HostCall call_host;  // empty where no host runs functions (the CLI): calling one is then an error
};

}  // namespace tegula::frontend
