#include "runtime/debug_record.h"

#include <algorithm>

#include "backends/cuda/driver_api.h"
#include "backends/cuda/module.h"
#include "runtime/errors.h"

namespace tegula::runtime {

namespace cuda = backends::cuda;

namespace {

// NumPy's names, which is what users pass and read.
std::string dtype_name(ir::Scalar s) {
  switch (s) {
    case ir::Scalar::I1: return "bool";
    case ir::Scalar::I8: return "int8";
    case ir::Scalar::I16: return "int16";
    case ir::Scalar::I32: return "int32";
    case ir::Scalar::I64: return "int64";
    case ir::Scalar::U8: return "uint8";
    case ir::Scalar::U16: return "uint16";
    case ir::Scalar::U32: return "uint32";
    case ir::Scalar::U64: return "uint64";
    case ir::Scalar::F16: return "float16";
    case ir::Scalar::BF16: return "bfloat16";
    case ir::Scalar::F32: return "float32";
    case ir::Scalar::F64: return "float64";
    case ir::Scalar::F8E4M3: return "float8e4nv";
    case ir::Scalar::F8E5M2: return "float8e5";
  }
  return "?";
}

std::string param_name(const CompiledKernel& kernel, int32_t index) {
  if (index < 0 || static_cast<size_t>(index) >= kernel.params.size()) return "?";
  return kernel.params[static_cast<size_t>(index)].name;
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

std::optional<DeviceFault> fault_of(const CompiledKernel& kernel, const DebugRecord& record) {
  if (record.reported == 0) return std::nullopt;
  DeviceFault::Details d;
  d.kernel = kernel.name;
  d.program_id = {record.pid[0], record.pid[1], record.pid[2]};
  std::string where = "program (" + std::to_string(d.program_id[0]) + ", " + std::to_string(d.program_id[1]) + ", " +
                      std::to_string(d.program_id[2]) + ")";
  if (record.site < 0 || static_cast<size_t>(record.site) >= kernel.debug_sites.size()) {
    // Cannot happen with a kernel and its own site table; still a report, not a crash.
    d.kind = "unknown";
    return DeviceFault("kernel `" + d.kernel + "`: debug check " + std::to_string(record.site) + " failed in " + where,
                       std::move(d));
  }
  const passes::DebugSite& site = kernel.debug_sites[static_cast<size_t>(record.site)];
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
  d.arg = param_name(kernel, record.param);
  d.dtype = dtype_name(site.element);
  std::string text = head + ": " + d.kind + " out of bounds in " + where + ": element offset " +
                     std::to_string(record.offset) + " of `" + d.arg + "` (" + std::to_string(record.size) +
                     (record.size == 1 ? " element, " : " elements, ") + d.dtype + ")";
  std::string others;
  for (int32_t p : site.params)
    if (p != record.param) others += (others.empty() ? "`" : ", `") + param_name(kernel, p) + "`";
  if (!others.empty()) text += "; the pointer may also come from " + others + ", and is outside that array too";
  text += record.offset < 0 ? "\nhint: a mask missing? the offsets reach before the start of the array"
                            : "\nhint: a mask missing? the offsets reach past the end of the array";
  return DeviceFault(std::move(text), std::move(d));
}

void add_debug_arguments(const CompiledKernel& kernel, const std::vector<ArgValue>& args, uint64_t record_address,
                         std::vector<uint64_t>& slots, std::vector<void*>& argv) {
  for (size_t i = 0; i < kernel.params.size() && i < args.size(); ++i) {
    if (!kernel.params[i].type.is_pointer()) continue;
    slots.push_back(args[i].extent_base);
    slots.push_back(args[i].extent_bytes);
  }
  slots.push_back(record_address);
  // slots may have moved: point every argument at its slot again.
  argv.resize(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) argv[i] = &slots[i];
}

namespace {

// A device buffer for the record, freed on every path out.
class DeviceRecord {
 public:
  DeviceRecord() {
    cuda::check(cuda::driver().cuMemAlloc(&address_, sizeof(DebugRecord)), "cuMemAlloc (debug record)");
  }
  ~DeviceRecord() { cuda::driver().cuMemFree(address_); }
  DeviceRecord(const DeviceRecord&) = delete;
  DeviceRecord& operator=(const DeviceRecord&) = delete;
  uint64_t address() const { return address_; }

 private:
  cuda::CUdeviceptr address_ = 0;
};

}  // namespace

void launch_cuda_debug(const CompiledKernel& kernel, const int64_t grid[3], const std::vector<ArgValue>& args,
                       std::vector<uint64_t>& slots, std::vector<void*>& argv, uint64_t stream, int device) {
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return;
  const cuda::DriverApi& api = cuda::driver();
  cuda::ScopedContext context(device);
  DeviceRecord record;
  DebugRecord host{};
  cuda::check(api.cuMemcpyHtoD(record.address(), &host, sizeof host), "cuMemcpyHtoD (debug record)");
  // A copy from pageable memory may still be in flight when it returns, and
  // the kernel may run on a stream that does not wait for it.
  cuda::check(api.cuCtxSynchronize(), "cuCtxSynchronize (debug record)");
  add_debug_arguments(kernel, args, record.address(), slots, argv);
  kernel.cuda_module->launch(grid, argv.data(), stream, device);  // debug kernels wait for the kernel
  cuda::check(api.cuMemcpyDtoH(&host, record.address(), sizeof host), "cuMemcpyDtoH (debug record)");
  if (std::optional<DeviceFault> fault = fault_of(kernel, host)) throw std::move(*fault);
}

}  // namespace tegula::runtime
