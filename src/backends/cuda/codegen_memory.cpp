// load and store.
//
// A tile access moves each thread's elements. When the layout gives a thread
// V consecutive elements (registers r..r+V-1 along the pointer's contiguous
// dim) and axis info proves the pointers there consecutive and V * size
// bytes aligned, the V elements move as one 16-, 8- or 4-byte access
// (tg_vec). A masked vector access happens when its whole mask is true (a
// mask known constant over V elements needs one test); otherwise that group
// falls back to one predicated access per element, so tails stay exact.
//
// Masked-off loads yield `other`, or 0 without it (what the CPU backend
// gives). i1 is one byte in memory: loads read `byte != 0`, stores write 0/1.
// A layout that replicates elements stores from one owner thread only.
// Scalar stores are done by thread 0. A load's cache_modifier (.ca .cg .cs .cv)
// or eviction_policy (evict_first / evict_last, in L1) becomes the PTX
// qualifier of its accesses (the prelude's tg_ld* functions); a store's
// cache_modifier (.wb .cg .cs .wt) its qualifier and its eviction_policy an
// L2 cache hint (tg_st*). `volatile` loads are per element through a
// volatile pointer.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "backends/cuda/codegen_access.h"
#include "backends/cuda/codegen_bounds.h"
#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

bool is_volatile(const ir::Op& op) {
  const ir::Attr* a = op.attr("volatile");
  return a != nullptr && std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) != 0;
}

// The prelude's qualified-access suffix (tg_ld<bytes>_<suffix>, tg_st<bytes>_<suffix>) for an access's
// cache_modifier (one of `modifiers`, each ".q" giving "q") or eviction_policy (evict_first "ef",
// evict_last "el"); empty for a plain access. PTX takes one of the two forms, so cache_modifier wins when
// both are given.
std::string access_suffix(const ir::Op& op, std::initializer_list<const char*> modifiers) {
  auto text = [&](const char* name) {
    const ir::Attr* a = op.attr(name);
    return a != nullptr && std::holds_alternative<std::string>(*a) ? std::get<std::string>(*a) : std::string();
  };
  std::string cache = text("cache_modifier");
  for (const char* m : modifiers)
    if (cache == m) return cache.substr(1);
  std::string evict = text("eviction_policy");
  if (evict == "evict_first") return "ef";
  if (evict == "evict_last") return "el";
  return "";
}
std::string cache_suffix(const ir::Op& load) { return access_suffix(load, {".ca", ".cg", ".cs", ".cv"}); }
std::string store_suffix(const ir::Op& store) { return access_suffix(store, {".wb", ".cg", ".cs", ".wt"}); }

// A statement storing element `value` of type s at `pointer`, with the store's qualifier `suffix`.
std::string store_element(ir::Scalar s, const std::string& pointer, const std::string& value,
                          const std::string& suffix) {
  std::string stored_value = s == ir::Scalar::I1 ? "(unsigned char)" + value : value;
  if (suffix.empty()) return "*" + pointer + " = " + stored_value + ";";
  int64_t bytes = ir::byte_size(s);
  std::string bits = bytes == 1 ? "unsigned char" : bytes == 2 ? "unsigned short" : bytes == 4 ? "unsigned"
                                                                                                : "unsigned long long";
  return "tg_st" + std::to_string(bytes) + "_" + suffix + "(" + pointer + ", tg_bit_cast<" + bits + ">((" +
         c_memory(s) + ")" + stored_value + "));";
}

// An expression reading one `type` (`bytes` wide) at `address`.
std::string global_read(const std::string& type, int64_t bytes, const std::string& address,
                        const std::string& suffix) {
  if (suffix.empty()) return "*reinterpret_cast<const " + type + "*>(" + address + ")";
  return "tg_bit_cast<" + type + ">(tg_ld" + std::to_string(bytes) + "_" + suffix + "(" + address + "))";
}

std::string read(ir::Scalar s, const std::string& pointer, bool volatile_access, const std::string& suffix) {
  std::string value = volatile_access ? "*(const volatile " + c_memory(s) + "*)" + pointer
                      : suffix.empty()  ? "*" + pointer
                                        : global_read(c_memory(s), ir::byte_size(s), pointer, suffix);
  return s == ir::Scalar::I1 ? "(" + value + " != 0)" : value;
}

std::string stored(ir::Scalar s, const std::string& value) {
  return s == ir::Scalar::I1 ? "(unsigned char)" + value : value;
}

}  // namespace

AccessPlan plan_access(const CudaContext& ctx, const ir::Op& op, const Layout& layout) {
  AccessPlan a;
  const ir::Type& ptr = ctx.fn.type(op.operands[0]);
  if (is_volatile(op)) return a;
  Distribution d = ctx.distribution(layout, ptr.shape);
  int dim = fastest_register_dim(d, ptr.shape);
  if (dim < 0) return a;
  const passes::AxisInfo& facts = ctx.axis_info.get(op.operands[0]);
  size_t du = static_cast<size_t>(dim);
  int64_t bytes = ir::byte_size(ptr.scalar);
  int64_t v = std::min<int64_t>({contiguous_registers(d, ptr.shape, dim), facts.contiguity[du], 16 / bytes,
                                  std::max<int64_t>(1, facts.divisibility[du] / bytes)});
  a.vector = static_cast<int>(std::max<int64_t>(1, v));
  size_t mask_index = op.kind == ir::OpKind::Load ? 1 : 2;
  if (op.operands.size() > mask_index && a.vector > 1)
    a.uniform_mask = ctx.axis_info.get(op.operands[mask_index]).constancy[du] >= a.vector;
  return a;
}

namespace {

std::string vec_type(ir::Scalar s, int vector) {
  return "tg_vec<" + c_memory(s) + ", " + std::to_string(vector) + ">";
}

// "m[i] && m[i + 1] && ..." over a group, or the first element alone.
std::string group_mask(const std::string& mask, const std::string& i, int vector, bool uniform) {
  if (uniform || vector == 1) return mask + "[" + i + "]";
  std::string all;
  for (int j = 0; j < vector; ++j) all += (j ? " && " : "") + mask + "[" + i + " + " + std::to_string(j) + "]";
  return all;
}

// How a group of `vector` elements of `s` splits into 32-bit words (one
// 16-bit word for a 2-byte group), for the packed loads and stores below.
struct WordPacking {
  WordPacking(ir::Scalar s, int vector)
      : element_bytes(static_cast<int>(ir::byte_size(s))),
        group_bytes(element_bytes * vector),
        word_bytes(std::min(4, group_bytes)),
        words(group_bytes / word_bytes),
        per_word(word_bytes / element_bytes),
        word(word_bytes == 4 ? "unsigned" : "unsigned short") {}
  int element_bytes, group_bytes, word_bytes, words, per_word;
  std::string word;  // the C type of one word
};

// A vector of 1- or 2-byte elements moves as 32-bit words (16-bit for a
// 2-byte group): `other` is packed into the words, the predicated load
// replaces whole registers, and elements are shifted out of the words.
// Element-typed vectors make NVVM select and unpack every 8/16-bit piece on
// its own (several PRMTs per element), which matters in compute-heavy
// bandwidth-bound kernels. `mask` is empty for an unmasked load.
void emit_packed_vector_load(CudaContext& ctx, ir::Scalar s, int vector, const std::string& dest,
                             const std::string& i, const std::string& ptrs, const std::string& mask,
                             const std::string& other, const std::string& suffix) {
  const WordPacking pack(s, vector);
  const int element_bytes = pack.element_bytes, group_bytes = pack.group_bytes, words = pack.words,
            per_word = pack.per_word;
  const std::string& word = pack.word;
  std::string vec = "tg_vec<" + word + ", " + std::to_string(words) + ">";
  std::string w = ctx.fresh("w");
  std::string load = global_read(vec, group_bytes, ptrs + "[" + i + "]", suffix);
  auto bits_of_other = [&](const std::string& index) {
    if (s == ir::Scalar::I1) return "(" + word + ")(" + other + "[" + index + "] ? 1 : 0)";
    std::string lane = element_bytes == 1 ? "unsigned char" : "unsigned short";  // no sign extension
    return "(" + word + ")(" + lane + ")(" + c_memory(s) + ")" + other + "[" + index + "]";
  };
  if (mask.empty()) {
    ctx.out.line("const " + vec + " " + w + " = " + load + ";");
  } else {
    ctx.out.line(vec + " " + w + ";");
    for (int k = 0; k < words; ++k) {
      std::string packed;
      for (int e = 0; e < per_word; ++e) {
        std::string index = i + " + " + std::to_string(k * per_word + e);
        std::string piece = other.empty() ? "0u" : bits_of_other(index);
        if (e > 0) piece = "(" + piece + " << " + std::to_string(8 * element_bytes * e) + ")";
        packed += (e ? " | " : "") + piece;
      }
      ctx.out.line(w + ".v[" + std::to_string(k) + "] = " + (other.empty() ? "0u" : "(" + word + ")(" + packed + ")") +
                   ";");
    }
    ctx.out.line("if (" + mask + "[" + i + "]) " + w + " = " + load + ";");
  }
  for (int k = 0; k < words; ++k) {
    for (int e = 0; e < per_word; ++e) {
      std::string bits = w + ".v[" + std::to_string(k) + "]";
      if (e > 0) bits = "(" + bits + " >> " + std::to_string(8 * element_bytes * e) + ")";
      std::string target = dest + "[" + i + " + " + std::to_string(k * per_word + e) + "]";
      std::string value = s == ir::Scalar::I1 ? "(" + bits + " & 0xffu) != 0" : "(" + c_memory(s) + ")" + bits;
      ctx.out.line(target + " = " + value + ";");
    }
  }
}

// The store side of emit_packed_vector_load: a group of 1-, 2- or 4-byte
// elements is packed into 32-bit words (one 16-bit word for a 2-byte group)
// and stored by one vector store (tg_st16, tg_st8), under
// `predicate` when it is not empty. A C++ vector assignment leaves NVVM to
// merge the pieces, and it splits them where it cannot prove the address
// aligned (addresses built through 64-bit integer arithmetic): the attention
// epilogue's 16-byte groups of bf16 became one 32-bit and six 16-bit stores
// each, and four 32-bit stores even as a uint4 (439 TFLOP/s against 462).
// Inline PTX stores stay whole too, but take no constant address offsets
// and pin the order: 13 more registers in the fused chain, 86% of the copy
// bandwidth against 91%.
void emit_word_vector_store(CudaContext& ctx, ir::Scalar s, int vector, const std::string& values,
                            const std::string& i, const std::string& ptrs, const std::string& predicate,
                            const std::string& suffix) {
  const WordPacking pack(s, vector);
  const int element_bytes = pack.element_bytes, words = pack.words, per_word = pack.per_word;
  const std::string& word = pack.word;
  auto bits = [&](const std::string& value) {
    if (s == ir::Scalar::F32) return "__float_as_uint(" + value + ")";
    if (element_bytes == 4) return "(unsigned)" + value;
    std::string lane = element_bytes == 1 ? "unsigned char" : "unsigned short";  // no sign extension
    return "(" + word + ")(" + lane + ")" + stored(s, value);
  };
  std::vector<std::string> packed;
  for (int k = 0; k < words; ++k) {
    std::string text;
    for (int e = 0; e < per_word; ++e) {
      std::string piece = bits(values + "[" + i + " + " + std::to_string(k * per_word + e) + "]");
      if (e > 0) piece = "(" + piece + " << " + std::to_string(8 * element_bytes * e) + ")";
      text += (e ? " | " : "") + piece;
    }
    packed.push_back(per_word == 1 ? text : "(" + word + ")(" + text + ")");
  }
  std::string address = ptrs + "[" + i + "]";
  if (words == 1) {  // a 4-, 2- or 1-byte group: a plain store
    std::string store =
        suffix.empty() ? "*reinterpret_cast<" + word + "*>(" + address + ") = " + packed[0] + ";"
                       : "tg_st" + std::to_string(pack.word_bytes) + "_" + suffix + "(" + address + ", " + packed[0] + ");";
    ctx.out.line(predicate.empty() ? store : "if (" + predicate + ") " + store);
    return;
  }
  std::string w = ctx.fresh("w");
  std::string type = words == 4 ? "uint4" : "uint2";
  ctx.out.line(type + " " + w + ";");
  for (int k = 0; k < words; ++k) ctx.out.line(w + "." + "xyzw"[k] + " = " + packed[static_cast<size_t>(k)] + ";");
  if (!suffix.empty()) {
    std::string store = std::string(words == 4 ? "tg_stv16_" : "tg_stv8_") + suffix + "(" + address + ", " + w + ");";
    ctx.out.line(predicate.empty() ? store : "if (" + predicate + ") " + store);
    return;
  }
  std::string helper = words == 4 ? "tg_st16" : "tg_st8";
  if (predicate.empty())
    ctx.out.line(helper + "(" + address + ", " + w + ");");
  else
    ctx.out.line(helper + "_if(" + predicate + ", " + address + ", " + w + ");");
}

void emit_tile_load(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  const Layout& layout = ctx.layout(result);
  int registers = ctx.declare_tile(ctx.name(result), t, layout);
  std::string dest = ctx.name(result);
  std::string ptrs = ctx.operand(id, 0);
  bool masked = op.operands.size() > 1;
  std::string mask = masked ? ctx.operand(id, 1) : "";
  std::string other = op.operands.size() > 2 ? ctx.operand(id, 2) : "";
  bool vol = is_volatile(op);
  std::string suffix = cache_suffix(op);
  AccessPlan a = plan_access(ctx, op, layout);
  ctx.before_global_load(op.operands[0]);

  auto fallback = [&](const std::string& index) {
    return other.empty() ? "(" + c_scalar(t.scalar) + ")0" : other + "[" + index + "]";
  };
  auto element_load = [&](const std::string& index) {
    std::string value = read(t.scalar, ptrs + "[" + index + "]", vol, suffix);
    return masked ? mask + "[" + index + "] ? " + value + " : " + fallback(index) : value;
  };

  if (a.vector == 1) {
    std::string i = ctx.open_unrolled(registers);
    ctx.out.line(dest + "[" + i + "] = " + element_load(i) + ";");
    ctx.out.close();
    return;
  }
  std::string i = ctx.open_unrolled(registers, a.vector);
  int element_bytes = static_cast<int>(ir::byte_size(t.scalar));
  if (element_bytes < 4 && !(masked && !a.uniform_mask)) {
    emit_packed_vector_load(ctx, t.scalar, a.vector, dest, i, ptrs, masked ? mask : "", other, suffix);
    ctx.out.close();
    return;
  }
  std::string vec = vec_type(t.scalar, a.vector);
  std::string w = ctx.fresh("w");
  std::string load = element_bytes == 8 && a.vector == 2 && suffix.empty()
                         ? "tg_ld16_b64<" + c_memory(t.scalar) + ">(" + ptrs + "[" + i + "])"
                         : global_read(vec, a.vector * element_bytes, ptrs + "[" + i + "]", suffix);
  auto unpack = [&] {
    std::string j = ctx.open_unrolled(a.vector);
    std::string value = w + ".v[" + j + "]";
    ctx.out.line(dest + "[" + i + " + " + j + "] = " + (t.scalar == ir::Scalar::I1 ? value + " != 0" : value) + ";");
    ctx.out.close();
  };
  if (!masked) {
    ctx.out.line("const " + vec + " " + w + " = " + load + ";");
    unpack();
  } else if (a.uniform_mask) {
    // The group starts as `other` and is overwritten by one predicated
    // vector load: no branch.
    ctx.out.line(vec + " " + w + ";");
    std::string j = ctx.open_unrolled(a.vector);
    std::string index = i + " + " + j;
    ctx.out.line(w + ".v[" + j + "] = " + (other.empty() ? "0" : stored(t.scalar, other + "[" + index + "]")) + ";");
    ctx.out.close();
    ctx.out.line("if (" + mask + "[" + i + "]) " + w + " = " + load + ";");
    unpack();
  } else {
    // Whole groups load as vectors, partial ones element by element.
    ctx.out.open("if (" + group_mask(mask, i, a.vector, false) + ")");
    ctx.out.line("const " + vec + " " + w + " = " + load + ";");
    unpack();
    ctx.out.close_open("else");
    std::string j = ctx.open_unrolled(a.vector);
    ctx.out.line(dest + "[" + i + " + " + j + "] = " + element_load(i + " + " + j) + ";");
    ctx.out.close();
    ctx.out.close();
  }
  ctx.out.close();
}

void emit_tile_store(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  const ir::Type& value_type = ctx.fn.type(op.operands[1]);
  const Layout& layout = ctx.operand_layout(id, 0);
  Distribution d = ctx.distribution(layout, value_type.shape);
  std::string ptrs = ctx.operand(id, 0), values = ctx.operand(id, 1);
  bool masked = op.operands.size() > 2;
  std::string mask = masked ? ctx.operand(id, 2) : "";
  AccessPlan a = plan_access(ctx, op, layout);
  ir::Scalar s = value_type.scalar;

  std::string suffix = store_suffix(op);
  std::string own = ctx.owner(d);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  auto element_store = [&](const std::string& index) {
    std::string store = store_element(s, ptrs + "[" + index + "]", values + "[" + index + "]", suffix);
    return masked ? "if (" + mask + "[" + index + "]) " + store : store;
  };
  if (a.vector == 1) {
    std::string i = ctx.open_unrolled(d.registers());
    ctx.out.line(element_store(i));
    ctx.out.close();
  } else {
    std::string i = ctx.open_unrolled(d.registers(), a.vector);
    // `predicate`: empty, or the condition of the whole group.
    auto vector_store = [&](const std::string& predicate) {
      if (ir::byte_size(s) <= 4)
        return emit_word_vector_store(ctx, s, a.vector, values, i, ptrs, predicate, suffix);
      std::string vec = vec_type(s, a.vector);
      std::string w = ctx.fresh("w");
      if (!predicate.empty()) ctx.out.open("if (" + predicate + ")");
      ctx.out.line(vec + " " + w + ";");
      std::string j = ctx.open_unrolled(a.vector);
      ctx.out.line(w + ".v[" + j + "] = " + stored(s, values + "[" + i + " + " + j + "]") + ";");
      ctx.out.close();
      if (!suffix.empty())  // 8-byte elements, two of them: 16 bytes of words
        ctx.out.line("tg_stv16_" + suffix + "(" + ptrs + "[" + i + "], tg_bit_cast<uint4>(" + w + "));");
      else if (ir::byte_size(s) == 8 && a.vector == 2)
        ctx.out.line("tg_st16_b64(" + ptrs + "[" + i + "], " + w + ");");
      else
        ctx.out.line("*reinterpret_cast<" + vec + "*>(" + ptrs + "[" + i + "]) = " + w + ";");
      if (!predicate.empty()) ctx.out.close();
    };
    if (!masked) {
      vector_store("");
    } else if (a.uniform_mask) {
      vector_store(mask + "[" + i + "]");
    } else {  // whole groups as vectors, partial ones element by element
      ctx.out.open("if (" + group_mask(mask, i, a.vector, false) + ")");
      vector_store("");
      ctx.out.close_open("else");
      std::string j = ctx.open_unrolled(a.vector);
      ctx.out.line(element_store(i + " + " + j));
      ctx.out.close();
      ctx.out.close();
    }
    ctx.out.close();
  }
  if (!own.empty()) ctx.out.close();
  ctx.after_global_store();
}

void emit_scalar_load(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  ir::Scalar s = ctx.fn.type(result).scalar;
  ctx.before_global_load(op.operands[0]);
  std::string value = read(s, ctx.name(op.operands[0]), is_volatile(op), cache_suffix(op));
  if (op.operands.size() > 1) {
    std::string other = op.operands.size() > 2 ? ctx.name(op.operands[2]) : "(" + c_scalar(s) + ")0";
    value = ctx.name(op.operands[1]) + " ? " + value + " : " + other;
  }
  ctx.out.line(c_const(ctx.fn.type(result)) + " " + ctx.name(result) + " = " + value + ";");
}

void emit_scalar_store(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  std::string cond = "threadIdx.x == 0";
  if (op.operands.size() > 2) cond += " && " + ctx.name(op.operands[2]);
  ir::Scalar s = ctx.fn.type(op.operands[1]).scalar;
  ctx.out.line("if (" + cond + ") " +
               store_element(s, ctx.name(op.operands[0]), ctx.name(op.operands[1]), store_suffix(op)));
  ctx.after_global_store();
}

}  // namespace

void emit_memory(CudaContext& ctx, ir::OpId id) {
  if (ctx.debug_sites) return emit_checked_memory(ctx, id);  // debug mode: codegen_bounds.cpp
  const ir::Op& op = ctx.fn.op(id);
  bool tile = ctx.fn.type(op.operands[0]).is_tile();
  if (op.kind == ir::OpKind::Load) return tile ? emit_tile_load(ctx, id) : emit_scalar_load(ctx, id);
  TEGULA_ASSERT(op.kind == ir::OpKind::Store, "not a memory op");
  tile ? emit_tile_store(ctx, id) : emit_scalar_store(ctx, id);
}

}  // namespace tegula::backends::cuda
