// The C-family printer: what turning tile IR into C-family source means
// whatever the target, with the CPU and CUDA backends as its two dialects
// (cpu::CodegenContext, cuda::CudaContext derive from it).
//
// The base owns the output (an Emitter), the names of values, fresh local
// names, the spelling of types in its dialect, the comment that names each
// op and its source location, and the skeleton of structured control flow
// (control_flow.h), which calls the hooks below where a dialect has work of
// its own: the CPU plans loop results computed in place, CUDA keeps its
// barrier and store bookkeeping, extra layouts and software pipelining.
// What differs in substance (CUDA's per-thread layouts, register arrays,
// shared memory and tensor cores; the CPU's fused loops over whole tiles)
// stays in the dialect, in files named for what they do.
//
// Naming: every IR value has a C++ name (`v7`, or a parameter's name),
// which a value sharing another's storage (loop results, views) takes over
// with alias().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/c_family/dialect.h"
#include "backends/c_family/emitter.h"
#include "ir/ir.h"

namespace tegula::backends::c_family {

class Printer {
 public:
  Printer(const ir::Function& fn, Dialect dialect);
  virtual ~Printer() = default;
  Printer(const Printer&) = delete;
  Printer& operator=(const Printer&) = delete;

  const ir::Function& fn;
  const Dialect dialect;
  Emitter out;

  // --- names -------------------------------------------------------------------
  const std::string& name(ir::ValueId v) const { return names_.at(v.index); }
  // `v` names the storage of `storage` from now on (no copy).
  virtual void alias(ir::ValueId v, ir::ValueId storage) { names_.at(v.index) = names_.at(storage.index); }
  // A fresh local name, e.g. "i3" for a loop counter.
  std::string fresh(std::string_view stem);

  // --- spellings in this dialect (spelling.h) ---------------------------------------
  std::string scalar_type(ir::Scalar s) const;
  std::string element_type(const ir::Type& t) const;
  std::string const_type(const ir::Type& t) const;

  // --- structure and comments ----------------------------------------------------------
  // The terminator of `block`.
  const ir::Op& terminator(ir::BlockId block) const;
  // "add.py:3:11" (the file escaped for a comment, text.h), or "" without a location.
  std::string location(const ir::Op& op) const;
  // "// v7 = add(v3, v6)  add.py:4:12": the comment line naming an op.
  std::string op_comment(const ir::Op& op) const;

  // --- what every dialect supplies ----------------------------------------------------------
  // Emits every op of `block` but its terminator.
  virtual void emit_block_body(ir::BlockId block) = 0;
  // Operand `k` of `op` as an expression: a scalar's name, or the tile's
  // storage (in the layout `op` reads it in, for CUDA).
  virtual std::string operand(ir::OpId op, size_t k) const { return name(fn.op(op).operands.at(k)); }
  // Declares mutable storage for `v`, named name(v).
  virtual void declare_storage(ir::ValueId v) = 0;
  // Copies `source` (an expression of v's type, e.g. operand()) into the
  // storage of `dest`; nothing when it is that storage.
  virtual void copy_value(ir::ValueId dest, const std::string& source) = 0;
  // Declares tile storage `copy` of type `t` (in the layout of `like`)
  // holding `source`: a value a parallel copy saves before overwriting it.
  virtual void declare_saved_tile(ir::ValueId like, const std::string& copy, const std::string& source) = 0;

  // --- control-flow hooks (control_flow.cpp calls them; nothing by default) -----------------
  // Before the C++ loop of `for` op `loop`, once its trip count `trips` is declared.
  virtual void begin_loop(ir::OpId loop, const std::string& trips) {}
  // At the top of the body of loop `loop` (for or while), before any of its regions' code.
  virtual void enter_loop_body(ir::OpId loop) {}
  // Where the arguments of `block` (a loop's carried values) get their values.
  virtual void enter_block(ir::BlockId block) {}
  // At the top of a `for` iteration, after its induction variable (counter `k`).
  virtual void begin_iteration(ir::OpId loop, const std::string& trips, const std::string& k) {}
  // Opens the C++ loop of `for` op `loop`: counter `k` of type `count_type`
  // over [0, trips); close_loop closes it. A dialect may split it into
  // chunks (the CPU polls for a stop between them, codegen_stop.h).
  virtual void open_for(ir::OpId loop, const std::string& count_type, const std::string& k, const std::string& trips);
  // Opens the C++ loop of `while` op `loop`, left by while_exit.
  virtual void open_while(ir::OpId loop);
  // The statement that leaves the loop of `while` op `loop`.
  virtual std::string while_exit(ir::OpId loop) { return "break;"; }
  // Closes what open_for or open_while opened.
  virtual void close_loop(ir::OpId loop);
  // Between the then-branch of `if` op `op` and its else-branch.
  virtual void before_else(ir::OpId op) {}
  // After the C++ code of a control-flow op's regions.
  virtual void leave_regions(ir::OpId op) {}
  // After a `for` loop, once its regions are left.
  virtual void end_loop(ir::OpId loop) {}

 protected:
  // How op comments name a value (name() by default).
  virtual std::string comment_name(ir::ValueId v) const { return name(v); }

  std::vector<std::string> names_;  // by value index

 private:
  int next_fresh_ = 0;
};

}  // namespace tegula::backends::c_family
