// Launch options: the keywords of a launch (`kernel[grid](..., num_warps=8)`),
// of `warmup` and of `triton.Config` that name no kernel parameter. Tegula
// accepts every option Triton's launch accepts (its CUDA and CPU backends'
// option sets), so a kernel written for Triton launches unchanged:
//
//   num_warps, num_stages, enable_fp_fusion, maxnreg, debug
//        change the generated code: part of the launch key (launch_key.h)
//   num_ctas            1 (anything else asks for thread-block clusters,
//                       which no Tegula backend runs: refused)
//   launch_cooperative_grid   False (True asks that every program be
//                       resident at once, which no Tegula launch
//                       guarantees: refused)
//   launch_pdl, sanitize_overflow, enable_reflect_ftz, num_cpu_threads,
//   enable_fast_math    accepted with a value of the right kind; they ask
//                       for nothing a result depends on (docs/python-api.md
//                       says what each does on each backend)
//   the rest of Triton's options (ptx_version, ir_override, extern_libs,
//   cluster_dims, arch, ...)   their default value only: any other value
//                       asks for something Tegula does not do (refused)
//
// Refusals are ValueError E0705 naming the kernel and the option; a value
// of the wrong kind is TypeError E0705.
#pragma once

#include <Python.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tegula::python {

enum class LaunchOption : uint8_t {
  NumWarps,
  NumStages,
  FpFusion,  // enable_fp_fusion
  Debug,
  MaxNReg,
  NumCtas,
  CooperativeGrid,  // launch_cooperative_grid
  Pdl,              // launch_pdl
  SanitizeOverflow,
  ReflectFtz,  // enable_reflect_ftz
  NumCpuThreads,
  FastMath,  // enable_fast_math
  Count,
};

// The options given to one launch, as given (borrowed from the call).
class LaunchOptions {
 public:
  // Records `value` when `name` is a launch option and returns true; false
  // for any other keyword (the caller reports it). An option accepted at
  // its default only is checked here and not kept.
  bool take(const std::string& kernel, PyObject* name, PyObject* value);
  // The option `name` names when it is one take() keeps (num_warps, ...);
  // nothing for any other keyword. set() then records it as take() would.
  static std::optional<LaunchOption> kept(PyObject* name);
  // Every keyword take() accepts, kept or fixed: what a misspelled one may mean.
  static std::vector<std::string> all_names();
  void set(LaunchOption option, PyObject* value) {
    given_[static_cast<size_t>(option)] = value;
    any_given_ = true;
  }
  // Refuses values of the wrong kind or that no backend can honour.
  void check(const std::string& kernel) const;

  PyObject* get(LaunchOption option) const { return given_[static_cast<size_t>(option)]; }

  // What the launch key holds, with the defaults for options not given.
  int num_warps() const;
  int num_stages() const;
  bool fp_fusion() const;
  bool debug(bool fallback) const;  // the launch's debug= keyword, else the kernel's setting
  int maxnreg() const;              // 0: none

  // Every option kept, as (name, value), for a callable grid's argument dict.
  template <class Visit>
  void each(Visit&& visit) const {
    for (size_t i = 0; i < given_.size(); ++i)
      if (given_[i]) visit(name_of(static_cast<LaunchOption>(i)), given_[i]);
  }
  static const char* name_of(LaunchOption option);

 private:
  std::array<PyObject*, static_cast<size_t>(LaunchOption::Count)> given_{};
  bool any_given_ = false;  // most launches give none: check() then has nothing to do
};

}  // namespace tegula::python
