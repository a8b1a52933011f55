// What the CUDA dialect adds to structured control flow
// (backends/c_family/control_flow.h), through the printer's hooks.
//
// Loop-carried values and `if` results are register arrays (or scalars) in
// the layout the plan chose for them (layout.h); a carried value's extra
// layouts are made at the top of every iteration. The barrier and store
// bookkeeping of CudaContext assumes the worst where code may run more than
// once or not at all: at the top of a loop body (its previous iteration may
// have left shared-memory readers and global stores behind), before an
// else-branch and after any region. Software pipelining
// (codegen_pipeline.cpp) hooks in before, at the top of each iteration of
// and after the `for` loops it applies to.
#include <string>

#include "backends/cuda/codegen_context.h"

namespace tegula::backends::cuda {

namespace {

int registers_of(const CudaContext& ctx, ir::ValueId v) {
  const ir::Type& t = ctx.fn.type(v);
  return t.is_tile() ? ctx.distribution(ctx.layout(v), t.shape).registers() : 0;
}

}  // namespace

void CudaContext::declare_storage(ir::ValueId v) {
  const ir::Type& t = fn.type(v);
  if (t.is_tile())
    declare_tile(name(v), t, layout(v));
  else
    out.line(c_element(t) + " " + name(v) + "{};");
}

void CudaContext::copy_value(ir::ValueId dest, const std::string& source) {
  if (fn.type(dest).is_tile())
    emit_tile_copy(*this, name(dest), source, registers_of(*this, dest));
  else if (name(dest) != source)
    out.line(name(dest) + " = " + source + ";");
}

void CudaContext::declare_saved_tile(ir::ValueId like, const std::string& copy, const std::string& source) {
  int registers = registers_of(*this, like);
  out.line(c_element(fn.type(like)) + " " + copy + "[" + std::to_string(registers) + "];");
  emit_tile_copy(*this, copy, source, registers);
}

void CudaContext::begin_loop(ir::OpId loop, const std::string& trips) { pipeline_before_loop(*this, loop, trips); }

void CudaContext::begin_iteration(ir::OpId loop, const std::string& trips, const std::string& k) {
  pipeline_iteration(*this, loop, trips, k);
}

void CudaContext::end_loop(ir::OpId loop) { pipeline_after_loop(*this, loop); }

void CudaContext::enter_loop_body(ir::OpId loop) {
  assume_shared_readers();
  for (ir::BlockId r : fn.op(loop).regions) {
    if (contains_store(r)) assume_global_stores();
    assume_bulk_reductions(r);
  }
}

void CudaContext::before_else(ir::OpId op) {
  // Barriers and stores of the then-branch are not known to have happened.
  assume_shared_readers();
  if (contains_store(fn.op(op).regions[0])) assume_global_stores();
  assume_bulk_reductions(fn.op(op).regions[0]);
}

void CudaContext::leave_regions(ir::OpId op) {
  assume_shared_readers();
  for (ir::BlockId r : fn.op(op).regions) {
    if (contains_store(r)) assume_global_stores();
    assume_bulk_reductions(r);
  }
}

void CudaContext::enter_block(ir::BlockId block) {
  for (ir::ValueId v : fn.block(block).args)
    if (fn.type(v).is_tile()) emit_extras(v);
}

}  // namespace tegula::backends::cuda
