#include "passes/debug_sites.h"

#include <charconv>

#include "ir/atomic.h"
#include "passes/pointer_provenance.h"

namespace tegula::passes {

const char* to_string(DebugSite::Kind kind) {
  switch (kind) {
    case DebugSite::Kind::Load: return "load";
    case DebugSite::Kind::Store: return "store";
    case DebugSite::Kind::Atomic: return "atomic";
    case DebugSite::Kind::Assert: return "assert";
  }
  return "?";
}

// Every memory op takes its pointer as operand 0.
namespace {

std::string hex(std::string_view text) {
  if (text.empty()) return "-";
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::optional<std::string> unhex(std::string_view text) {
  if (text == "-") return std::string();
  if (text.size() % 2 != 0) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); i += 2) {
    int high = nibble(text[i]), low = nibble(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<char>(high * 16 + low));
  }
  return out;
}

template <class Int>
std::string comma_list(const std::vector<Int>& values) {
  if (values.empty()) return "-";
  std::string out;
  for (Int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

template <class Int>
bool parse_number(std::string_view text, Int* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

template <class Int>
std::optional<std::vector<Int>> parse_list(std::string_view text) {
  std::vector<Int> out;
  if (text == "-") return out;
  while (true) {
    size_t comma = text.find(',');
    Int v{};
    if (!parse_number(text.substr(0, comma), &v)) return std::nullopt;
    out.push_back(v);
    if (comma == std::string_view::npos) return out;
    text.remove_prefix(comma + 1);
  }
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  while (!text.empty()) {
    size_t space = text.find(' ');
    if (space != 0) words.push_back(text.substr(0, space));
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
  return words;
}

}  // namespace

std::string to_text(const DebugSite& site) {
  return std::string(to_string(site.kind)) + " " + std::to_string(site.line) + " " + std::to_string(site.col) + " " +
         ir::to_string(site.element) + " " + comma_list(site.params) + " " + comma_list(site.shape) + " " + hex(site.file) + " " +
         hex(site.message);
}

std::optional<DebugSite> parse_debug_site(std::string_view text) {
  std::vector<std::string_view> w = split_words(text);
  if (w.size() != 8) return std::nullopt;
  DebugSite site;
  bool known = false;
  for (DebugSite::Kind kind : {DebugSite::Kind::Load, DebugSite::Kind::Store, DebugSite::Kind::Atomic,
                               DebugSite::Kind::Assert})
    if (w[0] == to_string(kind)) {
      site.kind = kind;
      known = true;
    }
  auto params = parse_list<int32_t>(w[4]);
  auto shape = parse_list<int64_t>(w[5]);
  auto file = unhex(w[6]);
  auto message = unhex(w[7]);
  if (!known || !parse_number(w[1], &site.line) || !parse_number(w[2], &site.col) ||
      !ir::parse_scalar(std::string(w[3]), &site.element) || !params || !shape || !file || !message)
    return std::nullopt;
  site.params = std::move(*params);
  site.shape = std::move(*shape);
  site.file = std::move(*file);
  site.message = std::move(*message);
  return site;
}

bool is_checked_access(ir::OpKind kind) {
  return kind == ir::OpKind::Load || kind == ir::OpKind::Store || ir::is_atomic(kind);
}

DebugSites::DebugSites(const ir::Function& fn) : index_(fn.num_ops(), -1) {
  PointerProvenance provenance(fn);
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    bool access = is_checked_access(op.kind);
    if (!access && op.kind != ir::OpKind::Assert) return;
    DebugSite site;
    if (op.loc.valid()) {
      if (op.loc.file < static_cast<int32_t>(fn.files.size())) site.file = fn.files[static_cast<size_t>(op.loc.file)];
      site.line = op.loc.line;
      site.col = op.loc.col;
    }
    if (access) {
      site.kind = op.kind == ir::OpKind::Load    ? DebugSite::Kind::Load
                  : op.kind == ir::OpKind::Store ? DebugSite::Kind::Store
                                                 : DebugSite::Kind::Atomic;
      site.element = fn.type(op.operands.at(0)).scalar;
      site.params = provenance.sources(op.operands[0]);
    } else {
      site.kind = DebugSite::Kind::Assert;
      site.message = op.has_attr("message") ? op.str_attr("message") : "";
      site.shape = fn.type(op.operands.at(0)).shape;
    }
    index_[id.index] = static_cast<int32_t>(sites_.size());
    sites_.push_back(std::move(site));
  });
}

}  // namespace tegula::passes
