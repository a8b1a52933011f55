#include "backends/cpu/codegen_stop.h"

#include <optional>

#include "backends/kernel_abi.h"
#include "passes/fold_constants.h"

namespace tegula::backends::cpu {

namespace {

// The trip count of `for` op `loop` when its bounds and step are constants
// (the arithmetic of tg_trip_count in the prelude); nothing otherwise.
std::optional<uint64_t> constant_trip_count(const ir::Function& fn, const ir::Op& loop) {
  __int128 bound[3];
  for (size_t i = 0; i < 3; ++i) {
    std::optional<passes::ConstantValue> c = passes::constant_value(fn, loop.operands[i]);
    if (!c || c->is_float()) return std::nullopt;
    // A u64 above INT64_MAX is stored as its bit pattern.
    if (!ir::is_signed(c->type) && c->int_value < 0) return std::nullopt;
    bound[i] = c->int_value;
  }
  __int128 lb = bound[0], ub = bound[1], step = bound[2];
  if (step > 0) return ub > lb ? static_cast<uint64_t>((ub - lb + step - 1) / step) : 0;
  if (step < 0) return lb > ub ? static_cast<uint64_t>((lb - ub - step - 1) / -step) : 0;
  return 0;
}

}  // namespace

bool loop_polls(const ir::Function& fn, const ir::Op& loop) {
  if (loop.kind == ir::OpKind::While) return true;
  if (loop.kind != ir::OpKind::For) return false;
  std::optional<uint64_t> trips = constant_trip_count(fn, loop);
  return !trips || *trips > abi::kUnpolledTripCount;
}

bool polls_for_stop(const ir::Function& fn) {
  bool polls = false;
  fn.walk([&](ir::OpId id) { polls = polls || loop_polls(fn, fn.op(id)); });
  return polls;
}

namespace {

const std::string kChunk = std::to_string(abi::kStopPollIterations) + "u";
const std::string kPoll = "if (tg_should_stop(tg_stop, tg_stopped)) return;";

}  // namespace

// for (k = 0; k < trips;) { end = min(trips, k + chunk); for (; k < end; ++k) { body } poll }
void CodegenContext::open_for(ir::OpId loop, const std::string& count_type, const std::string& k,
                              const std::string& trips) {
  if (!loop_polls(fn, fn.op(loop))) return Printer::open_for(loop, count_type, k, trips);
  // Names of their own (not fresh()), so the other names stay as they are without polls.
  std::string end = k + "_end";
  out.open("for (" + count_type + " " + k + " = 0; " + k + " < " + trips + ";)");
  out.line("const " + count_type + " " + end + " = " + trips + " - " + k + " > " + kChunk + " ? " + k + " + " + kChunk +
           " : " + trips + ";");
  out.open("for (; " + k + " < " + end + "; ++" + k + ")");
  stop_polls_.emplace(loop.index, k + " < " + trips + " && ");
}

// while (true) { for (w = 0; w < chunk; ++w) { before; if (!c) goto exit; after } poll } exit:;
void CodegenContext::open_while(ir::OpId loop) {
  Printer::open_while(loop);
  std::string w = "w" + std::to_string(loop.index);
  out.open("for (uint32_t " + w + " = 0; " + w + " < " + kChunk + "; ++" + w + ")");
  stop_polls_.emplace(loop.index, "");
  while_exits_.emplace(loop.index, "while_exit" + std::to_string(loop.index));
}

std::string CodegenContext::while_exit(ir::OpId loop) {
  auto exit = while_exits_.find(loop.index);
  return exit == while_exits_.end() ? Printer::while_exit(loop) : "goto " + exit->second + ";";
}

void CodegenContext::close_loop(ir::OpId loop) {
  auto poll = stop_polls_.find(loop.index);
  if (poll == stop_polls_.end()) return Printer::close_loop(loop);
  out.close();
  // After a full chunk: a `for` asks only when iterations remain.
  out.line(poll->second.empty() ? kPoll : "if (" + poll->second + "tg_should_stop(tg_stop, tg_stopped)) return;");
  out.close();
  auto exit = while_exits_.find(loop.index);
  if (exit != while_exits_.end()) out.line(exit->second + ":;");
}

void emit_stop_helpers(Emitter& unit, const ir::Function& fn) {
  if (!polls_for_stop(fn)) return;
  unit.line("// The launch's StopPoll (Tegula's kernel ABI): a loop below may run without limit. Each of");
  unit.line("// its chunks of " + std::to_string(abi::kStopPollIterations) +
            " iterations asks whether to stop; once told so, the program returns, then the entry.");
  unit.line("struct TgStopPoll { int32_t (*poll)(TgStopPoll* self); };");
  unit.open("static inline bool tg_should_stop(TgStopPoll* stop, bool& stopped)");
  unit.line("stopped = __builtin_expect(stop->poll(stop) != 0, 0);");
  unit.line("return stopped;");
  unit.close();
  unit.blank();
}

std::string stop_program_parameter(const ir::Function& fn) {
  return polls_for_stop(fn) ? ", TgStopPoll* tg_stop, bool& tg_stopped" : "";
}

std::string stop_program_argument(const ir::Function& fn) { return polls_for_stop(fn) ? ", tg_stop, tg_stopped" : ""; }

void emit_stop_entry(Emitter& unit, const ir::Function& fn, size_t slot) {
  if (!polls_for_stop(fn)) return;
  unit.line("// the launch's StopPoll: the slot after every other one");
  unit.line("TgStopPoll* const tg_stop = *static_cast<TgStopPoll* const*>(args[" + std::to_string(slot) + "]);");
  unit.line("bool tg_stopped = false;");
}

void emit_stop_after_program(Emitter& unit, const ir::Function& fn) {
  if (polls_for_stop(fn)) unit.line("if (tg_stopped) return;");
}

}  // namespace tegula::backends::cpu
