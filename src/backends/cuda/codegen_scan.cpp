// scan: N tiles scanned along `axis` by the combiner region, inlined as
// scalar code at every application (semantics: ir/scan_ops.h).
//
// The operands and the results share one layout (layout.cpp). Its
// distribution says where each bit of the axis coordinate lives: in a
// register bit, a lane bit or a warp bit (layout.h). The scan works bit by
// bit, from the lowest coordinate bit up, keeping two values per element:
//   P, the scan of the element's block of 2^k elements up to the element;
//   T, the combination of its whole block.
// Merging the blocks that differ in bit k (forward direction): the upper
// block's elements set P = combine(T_lower, P); both blocks set
// T = combine(T_lower, T_upper). The first argument always covers the earlier
// elements, so any associative combiner works. Reversed, "earlier" means
// "higher index" and the roles of the two blocks swap. The partner block is:
//  * a register bit: in the same thread (register i ^ 2^r), plain code;
//  * a lane bit: in lane ^ 2^l, read with __shfl_xor_sync;
//  * a run of coordinate bits held by warp bits: every thread writes T of its
//    elements to shared memory at their linear index, a barrier, then each
//    element combines the totals of the W blocks of its run in order,
//    picking up its P on the way (W - 1 combines, one barrier for the run).
// After the last bit, P is the scan.
#include <optional>
#include <string>
#include <vector>

#include "backends/c_family/combine.h"
#include "backends/cuda/codegen_context.h"
#include "ir/scan_ops.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using c_family::emit_combine;
using c_family::indexed;

namespace {

// Where coordinate bit k of the scanned dim lives.
struct BitHome {
  enum Kind { Register, Lane, Warp } kind;
  int bit;  // register-index bit, lane-id bit or warp-id bit
};

class ScanEmitter {
 public:
  ScanEmitter(CudaContext& ctx, ir::OpId id) : ctx_(ctx), op_(ctx.fn.op(id)), id_(id) {}

  void emit() {
    const ir::Type& t = ctx_.fn.type(op_.operands[0]);
    int axis = static_cast<int>(op_.int_attr("axis"));
    reverse_ = ir::scan_reverse(op_);
    const Layout& layout = ctx_.operand_layout(id_, 0);
    TEGULA_ASSERT(ctx_.distribution(ctx_.layout(op_.results[0]), t.shape) == ctx_.distribution(layout, t.shape),
                  "scan operands and results must share one layout");
    d_ = ctx_.distribution(layout, t.shape);
    shape_ = t.shape;
    std::vector<BitHome> homes = locate_axis_bits(axis);

    for (size_t j = 0; j < op_.operands.size(); ++j) {
      std::string type = c_element(ctx_.fn.type(op_.operands[j]).element());
      std::string registers = std::to_string(d_.registers());
      prefix_.push_back(ctx_.name(op_.results[j]));
      total_.push_back(ctx_.fresh("total"));
      ctx_.out.line(type + " " + prefix_.back() + "[" + registers + "];");
      ctx_.out.line(type + " " + total_.back() + "[" + registers + "];");
      std::string i = ctx_.open_unrolled(d_.registers());
      ctx_.out.line(prefix_.back() + "[" + i + "] = " + total_.back() + "[" + i + "] = " + ctx_.operand(id_, j) + "[" +
                    i + "];");
      ctx_.out.close();
    }
    for (size_t k = 0; k < homes.size();) {
      if (homes[k].kind == BitHome::Register) {
        register_step(homes[k].bit);
        ++k;
      } else if (homes[k].kind == BitHome::Lane) {
        lane_step(homes[k].bit);
        ++k;
      } else {
        size_t run = 1;
        while (k + run < homes.size() && homes[k + run].kind == BitHome::Warp) ++run;
        std::vector<BitHome> warps(homes.begin() + static_cast<std::ptrdiff_t>(k),
                                   homes.begin() + static_cast<std::ptrdiff_t>(k + run));
        warp_step(static_cast<int>(k), warps);
        k += run;
      }
    }
  }

 private:
  // The home of each coordinate bit of the axis, lowest first.
  std::vector<BitHome> locate_axis_bits(int axis) {
    std::vector<BitHome> homes;
    axis_base_ = linear_bit(axis, 0);
    for (int k = 0; (int64_t{1} << k) < shape_[static_cast<size_t>(axis)]; ++k) {
      int target = linear_bit(axis, k);
      std::optional<BitHome> home;
      for (size_t b = 0; b < d_.register_bits.size(); ++b)
        if (d_.register_bits[b] == target) home = BitHome{BitHome::Register, static_cast<int>(b)};
      for (size_t b = 0; b < d_.lane_bits.size(); ++b)
        if (d_.lane_bits[b] == target) home = BitHome{BitHome::Lane, static_cast<int>(b)};
      for (size_t b = 0; b < d_.warp_bits.size(); ++b)
        if (d_.warp_bits[b] == target) home = BitHome{BitHome::Warp, static_cast<int>(b)};
      TEGULA_ASSERT(home.has_value(), "a coordinate bit of the scanned dim is held nowhere");
      homes.push_back(*home);
    }
    return homes;
  }

  // Row-major linear bit of bit `k` of dim `dim`'s coordinate.
  int linear_bit(int dim, int k) const {
    int offset = 0;
    int64_t below = 1;
    for (size_t j = static_cast<size_t>(dim) + 1; j < shape_.size(); ++j) below *= shape_[j];
    while ((int64_t{1} << offset) < below) ++offset;
    return offset + k;
  }

  void register_step(int r) {
    int mask = 1 << r;
    std::string i = ctx_.open_unrolled(d_.registers());
    ctx_.out.open("if ((" + i + " & " + std::to_string(mask) + ") == 0)");
    std::string lo = i, hi = i + " + " + std::to_string(mask);
    // The later element of the pair takes the earlier block's total first.
    std::string later = reverse_ ? lo : hi;
    std::vector<std::string> earlier_total = indexed(total_, reverse_ ? hi : lo);
    emit_combine(ctx_, op_, earlier_total, indexed(prefix_, later), indexed(prefix_, later));
    emit_combine(ctx_, op_, earlier_total, indexed(total_, reverse_ ? lo : hi), indexed(total_, lo));
    for (const std::string& t : total_) ctx_.out.line(t + "[" + hi + "] = " + t + "[" + lo + "];");
    ctx_.out.close();
    ctx_.out.close();
  }

  void lane_step(int l) {
    ctx_.thread_ids();
    std::string m = std::to_string(1 << l);
    std::string upper = ctx_.fresh("upper");
    ctx_.out.line("const bool " + upper + " = (lane & " + m + ") != 0;");
    // This lane holds the later block when it is the upper lane going
    // forward, or the lower one in reverse.
    std::string later = reverse_ ? "!" + upper : upper;
    std::string i = ctx_.open_unrolled(d_.registers());
    std::vector<std::string> mine = indexed(total_, i), theirs;
    for (size_t j = 0; j < total_.size(); ++j) {
      std::string o = ctx_.fresh("other");
      ctx_.out.line(c_const(ctx_.fn.type(op_.operands[j]).element()) + " " + o + " = tg_shfl_xor(" + mine[j] + ", " +
                    m + ");");
      theirs.push_back(o);
    }
    ctx_.out.open("if (" + later + ")");
    emit_combine(ctx_, op_, theirs, indexed(prefix_, i), indexed(prefix_, i));
    ctx_.out.close();
    std::vector<std::string> first, second;
    for (size_t j = 0; j < total_.size(); ++j) {
      first.push_back(later + " ? " + theirs[j] + " : " + mine[j]);
      second.push_back(later + " ? " + mine[j] + " : " + theirs[j]);
    }
    emit_combine(ctx_, op_, first, second, mine);
    ctx_.out.close();
  }

  // Coordinate bits first..first+run-1 live in warp bits `homes`: their W
  // blocks are combined through shared memory.
  void warp_step(int first, const std::vector<BitHome>& homes) {
    ctx_.thread_ids();
    int run = static_cast<int>(homes.size());
    int blocks = 1 << run;
    int shift = axis_base_ + first;
    std::vector<int> pick(d_.warp_bits.size(), -1);  // warp-id bit -> bit of the block position
    for (int t = 0; t < run; ++t) pick[static_cast<size_t>(homes[static_cast<size_t>(t)].bit)] = t;
    std::string position = ctx_.fresh("block");
    ctx_.out.line("const int " + position + " = " + bits_expr("warp", pick, static_cast<int>(pick.size())) + ";");

    int64_t bytes = 0;
    std::vector<int64_t> offsets;
    for (ir::ValueId v : op_.operands) {
      int64_t size = element_bytes(ctx_.fn.type(v).element());
      bytes = (bytes + size - 1) / size * size;
      offsets.push_back(bytes);
      bytes += size * d_.numel;
    }
    std::string smem = ctx_.shared_scratch(bytes);
    std::vector<std::string> buffers;
    for (size_t j = 0; j < op_.operands.size(); ++j) {
      std::string type = c_element(ctx_.fn.type(op_.operands[j]).element());
      buffers.push_back(ctx_.fresh("s"));
      ctx_.out.line(type + "* const " + buffers.back() + " = reinterpret_cast<" + type + "*>(" + smem + " + " +
                    std::to_string(offsets[j]) + ");");
    }
    // Threads holding the same element (replication) write the same bits.
    std::string i = ctx_.open_unrolled(d_.registers());
    for (size_t j = 0; j < buffers.size(); ++j)
      ctx_.out.line(buffers[j] + "[" + ctx_.element_index(d_, i) + "] = " + total_[j] + "[" + i + "];");
    ctx_.out.close();
    ctx_.barrier();

    i = ctx_.open_unrolled(d_.registers());
    std::string line = ctx_.fresh("line");
    int64_t run_mask = int64_t{blocks - 1} << shift;
    ctx_.out.line("const int " + line + " = (" + ctx_.element_index(d_, i) + ") & ~" + std::to_string(run_mask) + ";");
    auto block_total = [&](const std::string& q) {
      std::vector<std::string> out;
      for (const std::string& b : buffers) out.push_back(b + "[" + line + " + (" + q + " << " + std::to_string(shift) + ")]");
      return out;
    };
    std::vector<std::string> running;
    for (size_t j = 0; j < buffers.size(); ++j) {
      running.push_back(ctx_.fresh("running"));
      ctx_.out.line(c_element(ctx_.fn.type(op_.operands[j]).element()) + " " + running.back() + " = " +
                    block_total(std::to_string(reverse_ ? blocks - 1 : 0))[j] + ";");
    }
    std::string q = ctx_.fresh("q");
    ctx_.out.line("#pragma unroll");
    if (reverse_)
      ctx_.out.open("for (int " + q + " = " + std::to_string(blocks - 2) + "; " + q + " >= 0; --" + q + ")");
    else
      ctx_.out.open("for (int " + q + " = 1; " + q + " < " + std::to_string(blocks) + "; ++" + q + ")");
    // `running` holds the blocks before q: this element's own block is q.
    ctx_.out.open("if (" + q + " == " + position + ")");
    emit_combine(ctx_, op_, running, indexed(prefix_, i), indexed(prefix_, i));
    ctx_.out.close();
    emit_combine(ctx_, op_, running, block_total(q), running);
    ctx_.out.close();
    for (size_t j = 0; j < total_.size(); ++j) ctx_.out.line(total_[j] + "[" + i + "] = " + running[j] + ";");
    ctx_.out.close();
    ctx_.shared_reads_done();
  }

  CudaContext& ctx_;
  const ir::Op& op_;
  ir::OpId id_;
  bool reverse_ = false;
  Distribution d_;
  std::vector<int64_t> shape_;
  int axis_base_ = 0;  // linear bit of the axis coordinate's bit 0
  std::vector<std::string> prefix_, total_;
};

}  // namespace

void emit_scan(CudaContext& ctx, ir::OpId op) { ScanEmitter(ctx, op).emit(); }

}  // namespace tegula::backends::cuda
