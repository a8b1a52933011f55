#include "backends/debug_fault.h"

#include <algorithm>

#include "backends/backend.h"

namespace tegula::backends {

namespace {

// NumPy's names, which is what users pass and read: tl's, but bool for i1.
std::string dtype_name(ir::Scalar s) { return s == ir::Scalar::I1 ? "bool" : ir::scalar_info(s).tl_name; }

std::string param_name(const KernelInfo& info, int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= info.params.size()) return "?";
  return info.params[static_cast<size_t>(index)].name;
}

// The position of flat element `index` in a row-major tile.
std::vector<int64_t> unravel(int64_t index, const std::vector<int64_t>& shape) {
  std::vector<int64_t> position(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t extent = std::max<int64_t>(shape[d], 1);
    position[d] = index % extent;
    index /= extent;
  }
  return position;
}

// "(3)", "(1, 2)".
std::string tuple_text(const std::vector<int64_t>& values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + ")";
}

}  // namespace

std::optional<DeviceFault> fault_of(const KernelInfo& info, const abi::DebugRecord& record) {
  if (record.reported == 0) return std::nullopt;
  DeviceFault::Details d;
  d.kernel = info.name;
  d.program_id = {record.pid[0], record.pid[1], record.pid[2]};
  std::string where = "program (" + std::to_string(d.program_id[0]) + ", " + std::to_string(d.program_id[1]) + ", " +
                      std::to_string(d.program_id[2]) + ")";
  if (record.site < 0 || static_cast<size_t>(record.site) >= info.debug_sites.size()) {
    // Cannot happen with a kernel and its own site table; still a report, not a crash.
    d.kind = "unknown";
    return DeviceFault("kernel `" + d.kernel + "`: debug check " + std::to_string(record.site) + " failed in " + where,
                       std::move(d));
  }
  const passes::DebugSite& site = info.debug_sites[static_cast<size_t>(record.site)];
  d.kind = passes::to_string(site.kind);
  d.file = site.file;
  d.line = site.line;
  d.col = site.col;
  std::string head = "kernel `" + d.kernel + "`";
  if (!site.file.empty())
    head += " at " + site.file + ":" + std::to_string(site.line) + ":" + std::to_string(site.col);

  if (site.kind == passes::DebugSite::Kind::Assert) {
    d.message = site.message;
    if (!site.shape.empty()) d.index = unravel(record.index, site.shape);
    std::string at = site.shape.empty() ? "" : " at idx " + tuple_text(d.index);
    return DeviceFault(head + ": device assertion failed in " + where + at + ": " + site.message, std::move(d));
  }

  d.offset = record.offset;
  d.size = record.size;
  d.arg = param_name(info, record.param);
  d.dtype = dtype_name(site.element);
  std::string text = head + ": " + d.kind + " out of bounds in " + where + ": element offset " +
                     std::to_string(record.offset) + " of `" + d.arg + "` (" + std::to_string(record.size) +
                     (record.size == 1 ? " element, " : " elements, ") + d.dtype + ")";
  std::string others;
  for (int32_t p : site.params)
    if (p != record.param) others += (others.empty() ? "`" : ", `") + param_name(info, p) + "`";
  if (!others.empty()) text += "; the pointer may also come from " + others + ", and is outside that array too";
  text += record.offset < 0 ? "\nhint: a mask missing? the offsets reach before the start of the array"
                            : "\nhint: a mask missing? the offsets reach past the end of the array";
  return DeviceFault(std::move(text), std::move(d));
}

void add_debug_arguments(const KernelInfo& info, std::span<const ArgValue> args, uint64_t record_address,
                         PackedArguments& packed) {
  for (size_t i = 0; i < info.params.size() && i < args.size(); ++i) {
    if (!info.params[i].type.is_pointer()) continue;
    packed.append(args[i].extent_base);
    packed.append(args[i].extent_bytes);
  }
  packed.append(record_address);
}

}  // namespace tegula::backends
