#include "backends/cuda/backend.h"

#include <array>
#include <bit>
#include <optional>

#include "backends/cache_key.h"
#include "backends/cuda/codegen.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/module.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/tma_plan.h"

namespace tegula::backends::cuda {

namespace {

void check_options(const TargetOptions& options) {
  if (!std::has_single_bit(static_cast<unsigned>(std::max(options.num_warps, 0))))
    fail(ErrorKind::Value, Diag::InvalidCompileOption,
         "num_warps must be a power of two, got " + std::to_string(options.num_warps));
  if (options.num_warps > 32)
    fail(ErrorKind::Value, Diag::InvalidCompileOption,
         "num_warps must be at most 32 (1024 threads per block), got " + std::to_string(options.num_warps));
  if (options.num_stages < 1 || options.num_stages > 8)
    fail(ErrorKind::Value, Diag::InvalidCompileOption,
         "num_stages must be from 1 to 8, got " + std::to_string(options.num_stages));
}

class CudaTarget : public Target {
 public:
  CudaTarget(const TargetOptions& options, NvrtcTarget target) : options_(options), target_(std::move(target)) {}

  // The architecture NVRTC builds for and its version, and every option
  // that reaches the generated code.
  void add_key_fields(CacheKey& key) const override {
    key.field("gpu_architecture", target_.gpu_architecture);
    key.field("arch", int64_t{target_.arch});
    key.field("nvrtc", target_.nvrtc_version);
    key.field("num_warps", int64_t{options_.num_warps});
    key.field("fp_fusion", int64_t{options_.fp_fusion});
    key.field("num_stages", int64_t{options_.num_stages});
    if (options_.maxnreg > 0) key.field("maxnreg", int64_t{options_.maxnreg});
  }

  int arch() const override { return target_.arch; }

  // sm_90 copies with the TMA what tma_plan.h allows, a store or reduction
  // whose offsets may be negative only where they are not; debug kernels
  // check every element against its array's bounds, so they keep the pointer
  // form. Why an op is lowered on sm_90 goes into the layouts text (`inspect`).
  ir::DescriptorPath descriptor_path(const ir::Function& fn, const ir::Op& op) const override {
    if (target_.arch < 90) return ir::DescriptorPath::Lower;
    std::string why = options_.debug ? "debug mode checks every element" : tma_refusal(fn, op);
    if (why.empty()) why = tma_offset_refusal(fn, op, axes_of(fn));
    if (!why.empty()) {
      pointer_form_notes_ += descriptor_op_name(fn, op) + ": pointer form, " + why + "\n";
      return ir::DescriptorPath::Lower;
    }
    if (std::string doubt = tma_sign_doubt(fn, op); !doubt.empty()) {
      pointer_form_notes_ += descriptor_op_name(fn, op) + ": pointer form where an offset is negative, " + doubt +
                             " (a TMA " + (op.kind == ir::OpKind::DescStore ? "store" : "reduction") +
                             " must start inside the tensor)\n";
      return ir::DescriptorPath::KeepWhereOffsetsNonNegative;
    }
    return ir::DescriptorPath::Keep;
  }

  Generated emit(const ir::Function& fn) const override {
    CudaKernel kernel =
        emit_cuda(fn, {options_.num_warps, target_.arch, options_.debug, options_.fp_fusion, options_.num_stages,
                       options_.maxnreg});
    TEGULA_ASSERT(kernel.num_threads > 0, "the CUDA code generator chose no block size");
    return Generated{std::move(kernel.source), kernel.layouts + pointer_form_notes_, {kernel.num_threads, kernel.shared_bytes},
                     kernel.tune_occupancy ? kernel.num_threads : 0, std::move(kernel.tensor_maps)};
  }

  // NVRTC reports rejected source as InternalError (generated code should
  // always compile); compile_to_image times its own phases: "nvrtc", and
  // "nvrtc occupancy" when it builds twice.
  BuildDetails build(const Generated& generated, const std::string& kernel_name, const std::string& output_path,
                     CompileProfile& profile) const override {
    Image image = compile_to_image(generated.source, kernel_name, target_, options_.debug, options_.keep_details,
                                   options_.fp_fusion, generated.occupancy_threads, &profile);
    write_new_file(output_path, image.binary);
    return BuildDetails{std::move(image.ptx), std::move(image.log)};
  }

  // The PTX and ptxas's report come from NVRTC: it runs again.
  BuildDetails details(const Generated& generated, const std::string& kernel_name) const override {
    Image image = compile_to_image(generated.source, kernel_name, target_, options_.debug, /*keep_details=*/true,
                                   options_.fp_fusion, generated.occupancy_threads);
    return BuildDetails{std::move(image.ptx), std::move(image.log)};
  }

 private:
  TargetOptions options_;
  NvrtcTarget target_;
  // The axis analysis of `fn`, made once for all its desc ops: lower_descriptors
  // asks about each before it changes the function (the size is checked).
  const passes::AxisInfoAnalysis& axes_of(const ir::Function& fn) const {
    std::array<size_t, 2> size{fn.num_values(), fn.num_ops()};
    if (!axes_ || axes_fn_ != &fn || axes_size_ != size) {
      axes_.emplace(fn);
      axes_fn_ = &fn;
      axes_size_ = size;
    }
    return *axes_;
  }

  // A Target serves one compile on one thread: descriptor_path's notes
  // wait here for emit(), and its analysis is kept between its calls.
  mutable std::string pointer_form_notes_;
  mutable std::optional<passes::AxisInfoAnalysis> axes_;
  mutable const ir::Function* axes_fn_ = nullptr;
  mutable std::array<size_t, 2> axes_size_{};
};

constexpr Output kOutputs[] = {{"layouts", OutputKind::Layouts},
                               {"cuda", OutputKind::Source},
                               {"ptx", OutputKind::Assembly},
                               {"ptxas", OutputKind::BuildLog}};

class CudaBackend : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  BackendKind kind() const override { return BackendKind::Device; }
  std::string_view description() const override { return "CUDA GPUs"; }
  std::string_view arrays_hint() const override { return "CUDA tensors (torch, CuPy)"; }
  std::span<const Output> outputs() const override { return kOutputs; }
  std::string_view source_extension() const override { return "cu"; }
  std::string_view artifact_extension() const override { return "cubin"; }

  // A compile needs NVRTC, and the driver unless options.arch names the
  // architecture; showing the source needs only the architecture.
  std::unique_ptr<Target> target(const TargetOptions& options, Setup setup) const override {
    check_options(options);
    NvrtcTarget target;
    if (setup == Setup::Compile)
      target = resolve_target(options.device, options.arch);
    else
      target.arch = options.arch > 0 ? options.arch : device_arch(options.device);
    return std::make_unique<CudaTarget>(options, std::move(target));
  }

  std::shared_ptr<const LoadedKernel> load(const Artifact& artifact, const KernelInfo& info,
                                           std::string* why) const override {
    if (info.shape.threads < 1) {
      *why = "the manifest gives the kernel no block size";
      return nullptr;
    }
    return std::make_shared<Module>(info.name, artifact.bytes, info.shape.threads, info.shape.shared_bytes,
                                    info.debug);
  }

  int device_count() const override { return cuda::device_count(); }
  int device_of(uint64_t address) const override { return pointer_device(address); }
  std::optional<int> device_owning(uint64_t address) const override {
    if (address == 0 || !driver_available()) return std::nullopt;
    return device_owning_pointer(address);
  }
};

}  // namespace

const Backend& backend() {
  static const CudaBackend instance;
  return instance;
}

}  // namespace tegula::backends::cuda
