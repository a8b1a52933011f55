#include "backends/backend.h"

#include "support/error.h"

namespace tegula::backends {

std::vector<std::pair<std::string, int64_t>> LoadedKernel::resources(const KernelInfo& info, int device) const {
  fail(ErrorKind::Value, Diag::WrongLaunchTarget,
       "kernel '" + info.name + "' runs on the host; it has no device resources");
}

ir::DescriptorPath Target::descriptor_path(const ir::Function&, const ir::Op&) const { return ir::DescriptorPath::Lower; }

BuildDetails Target::details(const Generated& generated, const std::string& kernel_name) const { return {}; }

int Backend::device_of(uint64_t address) const {
  fail(ErrorKind::Value, Diag::WrongLaunchTarget,
       "the " + std::string(name()) + " backend has no devices to own address " + std::to_string(address));
}

}  // namespace tegula::backends
