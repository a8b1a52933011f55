// CompiledKernel: what a launch runs. `launch` is the bare launch (the
// launcher of bind_launch.cpp is what `kernel[grid](...)` calls): it converts
// the (already validated) Python values straight into ArgValues by the
// parameter types and releases the GIL while the grid runs (host backends)
// or while the driver queues it (device backends, on the caller's stream
// handle and device).
#include <nanobind/operators.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "bindings/bindings.h"
#include "bindings/launch_arguments.h"
#include "bindings/launch_options.h"
#include "backends/cuda/occupancy.h"
#include "ir/parser.h"
#include "passes/work_count.h"
#include "runtime/compiler.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tegula::python {
namespace {

using runtime::ArgValue;
using runtime::CompiledKernel;

[[noreturn]] void argument_error(const CompiledKernel& kernel, const ir::Param& param,
                                 const char* expected, nb::handle got) {
  std::string message = "argument '" + param.name + "' of kernel '" + kernel.name + "' (" +
                        ir::to_string(param.type) + ") expects " + expected + ", got " +
                        nb::type_name(got.type()).c_str();
  tegula::fail(ErrorKind::Type, Diag::LaunchArgumentType, std::move(message));
}

// The Python side has already chosen the parameter's kind from the value, so
// a mismatch here is a caller bug; it still surfaces as a TypeError.
ArgValue convert(const CompiledKernel& kernel, const ir::Param& param, nb::handle value) {
  ArgValue out;
  const ir::Type& type = param.type;
  if (type.is_pointer()) {
    out.kind = ArgValue::Kind::Pointer;
    if (!nb::try_cast<uint64_t>(value, out.bits))
      argument_error(kernel, param, "an address (int)", value);
  } else if (ir::is_float(type.scalar)) {
    out.kind = ArgValue::Kind::Float;
    if (!nb::try_cast<double>(value, out.real)) argument_error(kernel, param, "a float", value);
  } else if (type.scalar == ir::Scalar::I1) {
    out.kind = ArgValue::Kind::Bool;
    bool b = false;
    if (!nb::try_cast<bool>(value, b)) argument_error(kernel, param, "a bool", value);
    out.bits = b ? 1 : 0;
  } else if (ir::is_signed(type.scalar)) {
    out.kind = ArgValue::Kind::Int;
    int64_t v = 0;
    if (!nb::try_cast<int64_t>(value, v)) argument_error(kernel, param, "an int", value);
    out.bits = static_cast<uint64_t>(v);
  } else {
    out.kind = ArgValue::Kind::UInt;
    if (!nb::try_cast<uint64_t>(value, out.bits))
      argument_error(kernel, param, "a non-negative int", value);
  }
  return out;
}

std::vector<ArgValue> convert_all(const CompiledKernel& kernel, const std::array<int64_t, 3>& grid, nb::list args) {
  const size_t count = nb::len(args);
  if (count != kernel.params.size()) {
    tegula::fail(ErrorKind::Value, Diag::LaunchArgumentCount,
                  "kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) +
                      " runtime arguments, got " + std::to_string(count));
  }
  std::vector<ArgValue> values;
  values.reserve(count);
  for (size_t i = 0; i < count; ++i) values.push_back(convert(kernel, kernel.params[i], args[i]));
  for (int64_t g : grid)
    if (g < 0) tegula::fail(ErrorKind::Value, Diag::InvalidGrid, "grid dimensions must be >= 0");
  return values;
}

// Debug kernels: each array argument's (first byte, byte count), None for
// the other arguments (backends/kernel_abi.h).
void set_extents(const CompiledKernel& kernel, std::vector<ArgValue>& values, nb::handle extents) {
  if (extents.is_none()) return;
  nb::list list = nb::cast<nb::list>(extents);
  if (nb::len(list) != values.size())
    tegula::fail(ErrorKind::Value, Diag::LaunchArgumentCount,
                  "kernel '" + kernel.name + "': " + std::to_string(nb::len(list)) + " array extents for " +
                      std::to_string(values.size()) + " arguments");
  for (size_t i = 0; i < values.size(); ++i) {
    if (list[i].is_none()) continue;
    auto [base, bytes] = nb::cast<std::tuple<uint64_t, uint64_t>>(list[i]);
    values[i].extent_base = base;
    values[i].extent_bytes = bytes;
  }
}

// `stream` None: a launch that needs none (host backends); else the caller's
// stream handle on `device` (device backends).
void launch(const CompiledKernel& kernel, const std::array<int64_t, 3>& grid, nb::list args, nb::handle stream,
            int device, nb::handle extents) {
  std::vector<ArgValue> values = convert_all(kernel, grid, args);
  set_extents(kernel, values, extents);
  std::optional<backends::Stream> where;
  if (!stream.is_none()) where = backends::Stream{nb::cast<uint64_t>(stream), device};
  nb::gil_scoped_release released;
  kernel.launch(grid.data(), values, where);
}

// What the kernel uses on `device` (device backends; loads it there if needed).
nb::dict resources(const CompiledKernel& kernel, int device) {
  if (!kernel.loaded)
    tegula::fail(ErrorKind::Value, Diag::WrongLaunchTarget, "kernel '" + kernel.name + "' is not loaded");
  std::vector<std::pair<std::string, int64_t>> used;
  {
    nb::gil_scoped_release released;
    used = kernel.loaded->resources(kernel, device);
  }
  nb::dict d;
  for (const auto& [name, value] : used) d[name.c_str()] = value;
  return d;
}

uint64_t data_address(nb::handle array) {
  nb::object capsule;
  return reinterpret_cast<uintptr_t>(array_interface(array, capsule)->data);
}

nb::dict stage_dict(const CompiledKernel& kernel) {
  nb::dict d;  // insertion order is pipeline order
  for (const auto& dump : kernel.stages.ir) d[dump.stage.c_str()] = dump.ir;
  return d;
}

// {name: PointerEffects} of the pointer parameters.
nb::dict effects_of(const CompiledKernel& k) {
  nb::dict d;
  for (size_t i = 0; i < k.params.size() && i < k.effects.size(); ++i)
    if (k.params[i].type.is_pointer()) d[k.params[i].name.c_str()] = k.effects[i];
  return d;
}

// The tensor maps a launch encodes, after the parameters: {"base": name,
// "shape": [...], "strides": [...], "box": [...], "swizzle": int, "fill":
// "zero" | "nan"}, each extent a parameter's name, a constant, or a product
// of them the kernel computes ("Z*H*N_CTX@32").
nb::list tensor_maps_of(const CompiledKernel& k) {
  auto extents = [&](const std::vector<backends::TensorMapExtent>& list) {
    nb::list out;
    auto name = [&](int param) { return k.params.at(static_cast<size_t>(param)).name; };
    for (const backends::TensorMapExtent& e : list) {
      if (e.factors.empty() && e.scale == 1 && e.bits == 0) {
        out.append(e.param >= 0 ? nb::object(nb::str(name(e.param).c_str())) : nb::object(nb::int_(e.value)));
        continue;
      }
      // A product: "Z*H*N_CTX", "N*2", with "@32" when the kernel multiplies in 32 bits.
      std::string text = e.param >= 0 ? name(e.param) : std::to_string(e.value);
      for (int f : e.factors) text += "*" + name(f);
      if (e.scale != 1) text += "*" + std::to_string(e.scale);
      if (e.bits != 0) text += "@" + std::to_string(e.bits);
      out.append(nb::str(text.c_str()));
    }
    return out;
  };
  nb::list out;
  for (const backends::TensorMapParam& map : k.tensor_maps) {
    nb::dict d;
    d["base"] = k.params.at(static_cast<size_t>(map.base)).name;
    d["shape"] = extents(map.shape);
    d["strides"] = extents(map.strides);
    d["box"] = map.box;
    d["swizzle"] = map.swizzle;
    d["fill"] = map.nan_fill ? "nan" : "zero";
    out.append(d);
  }
  return out;
}

// (name, type, divisibility) per runtime parameter, e.g. ("x", "ptr<f32>", 16).
std::vector<std::tuple<std::string, std::string, int64_t>> param_tuples(const CompiledKernel& k) {
  std::vector<std::tuple<std::string, std::string, int64_t>> out;
  out.reserve(k.params.size());
  for (const auto& p : k.params) out.emplace_back(p.name, ir::to_string(p.type), p.divisibility);
  return out;
}

// Triton's `CompiledKernel.asm`: every artefact of the kernel by name, in
// pipeline order. Tegula's IR stages under their own names ("lowered", ...),
// then the backend's outputs under the names the backend gives them ("cpp";
// "layouts", "cuda", "ptx", "ptxas"), then the artifact's bytes under its
// extension ("so", "cubin"), and on the CUDA backend "sass", disassembled on
// first use (tegula/_sass.py). Only what the backend has.
nb::object asm_of(const CompiledKernel& kernel) {
  runtime::Stages stages;
  std::string artifact;
  {
    nb::gil_scoped_release released;  // may compile again (runtime::stages_of)
    stages = runtime::stages_of(kernel);
    artifact = runtime::artifact_of(kernel);
  }
  nb::dict d;
  for (const auto& dump : stages.ir) d[dump.stage.c_str()] = dump.ir;
  if (kernel.backend) {
    for (const backends::Output& output : kernel.backend->outputs()) {
      const std::string* text = nullptr;
      switch (output.kind) {
        case backends::OutputKind::Source: text = &stages.source; break;
        case backends::OutputKind::Layouts: text = &stages.layouts; break;
        case backends::OutputKind::Assembly: text = &stages.ptx; break;
        case backends::OutputKind::BuildLog: text = &stages.compile_log; break;
      }
      if (text && !text->empty()) d[std::string(output.name).c_str()] = *text;
    }
    if (!artifact.empty())
      d[std::string(kernel.backend->artifact_extension()).c_str()] = nb::bytes(artifact.data(), artifact.size());
  }
  // The dict Python sees makes "sass" from "cubin" when it is first read.
  return nb::module_::import_("tegula._sass").attr("Asm")(d);
}

// Registers per thread and spilled registers, from the assembler's report
// (ptxas's, CUDA); None where the backend has no such report (the CPU).
std::pair<nb::object, nb::object> registers_of(const CompiledKernel& kernel) {
  runtime::Stages stages;
  {
    nb::gil_scoped_release released;
    stages = runtime::stages_of(kernel);
  }
  std::optional<backends::cuda::RegisterReport> report = backends::cuda::parse_ptxas_report(stages.compile_log);
  if (!report) return {nb::none(), nb::none()};
  return {nb::int_(report->registers), nb::int_(report->spill_stores / 4)};
}

// Triton's `CompiledKernel.metadata`: the options the kernel was built
// with and what it uses, as attributes.
nb::object metadata_of(const CompiledKernel& kernel) {
  runtime::CompileOptions options = kernel.origin ? kernel.origin->options : runtime::CompileOptions{};
  auto [n_regs, n_spills] = registers_of(kernel);
  nb::dict d;
  d["name"] = kernel.name;
  d["backend_name"] = kernel.backend ? std::string(kernel.backend->name()) : std::string();
  d["num_warps"] = options.num_warps;
  // A host backend builds the same code whatever num_stages and maxnreg say
  // (they are not in its cache key, so one kernel serves launches that gave
  // different values): None, not the value of whichever launch compiled it.
  bool device = kernel.backend && kernel.backend->kind() == backends::BackendKind::Device;
  d["num_stages"] = device ? nb::object(nb::int_(options.num_stages)) : nb::none();
  d["num_ctas"] = 1;
  d["cluster_dims"] = nb::make_tuple(1, 1, 1);
  d["maxnreg"] = device && options.maxnreg > 0 ? nb::object(nb::int_(options.maxnreg)) : nb::none();
  d["enable_fp_fusion"] = options.fp_fusion;
  d["launch_cooperative_grid"] = false;
  d["launch_pdl"] = false;
  d["debug"] = kernel.debug;
  d["shared"] = kernel.shape.shared_bytes;
  d["num_threads"] = kernel.shape.threads;
  d["n_regs"] = n_regs;
  d["n_spills"] = n_spills;
  d["hash"] = kernel.key;
  nb::object metadata = nb::module_::import_("types").attr("SimpleNamespace")();
  for (auto [name, value] : d) nb::setattr(metadata, name, value);
  return metadata;
}

// The compiler's count of bytes and operations at one launch
// (passes/work_count.h), over the IR after the last optimization stage
// (compiled again when the kernel came without its stages).
nb::dict work_of(const CompiledKernel& kernel, const std::array<int64_t, 3>& grid,
                 const std::vector<std::optional<int64_t>>& scalars) {
  passes::LaunchValues launch{grid, scalars};
  launch.scalars.resize(kernel.params.size());
  passes::WorkCount count;
  std::string text;
  {
    nb::gil_scoped_release released;
    runtime::Stages stages = runtime::stages_of(kernel);
    if (stages.ir.empty())
      tegula::fail(ErrorKind::Value, Diag::WrongLaunchTarget, "kernel '" + kernel.name + "' has no IR to count");
    ir::Function fn = ir::parse(stages.ir.back().ir);
    count = passes::count_work(fn, launch);
    text = passes::to_string(count, fn);
  }
  nb::dict params;
  for (size_t i = 0; i < kernel.params.size() && i < count.params.size(); ++i)
    if (kernel.params[i].type.is_pointer())
      params[kernel.params[i].name.c_str()] =
          nb::make_tuple(count.params[i].loaded_bytes, count.params[i].stored_bytes);
  nb::dict d;
  d["loaded_bytes"] = count.loaded_bytes;
  d["stored_bytes"] = count.stored_bytes;
  d["params"] = params;
  d["dot_ops"] = count.dot_ops;
  d["arithmetic_ops"] = count.arithmetic_ops;
  d["transcendental_ops"] = count.transcendental_ops;
  d["known"] = count.known;
  d["notes"] = count.notes;
  d["text"] = text;
  return d;
}

}  // namespace

void bind_kernel(nb::module_& m) {
  using passes::PointerEffects;
  nb::class_<PointerEffects>(m, "PointerEffects",
                             "What a kernel may do to the memory behind one pointer parameter "
                             "(passes/pointer_effects.h): read it, write it, update it atomically.")
      .def(
          "__init__",
          [](PointerEffects* self, bool read, bool written, bool atomic) {
            new (self) PointerEffects{read, written, atomic};
          },
          "read"_a = false, "written"_a = false, "atomic"_a = false)
      .def_ro("read", &PointerEffects::read)
      .def_ro("written", &PointerEffects::written)
      .def_ro("atomic", &PointerEffects::atomic)
      .def(nb::self == nb::self)
      .def("__repr__", [](const PointerEffects& e) {
        return std::string("PointerEffects(read=") + (e.read ? "True" : "False") +
               ", written=" + (e.written ? "True" : "False") + ", atomic=" + (e.atomic ? "True" : "False") + ")";
      });

  m.def(
      "launch_option_names",
      [] { return LaunchOptions::all_names(); },
      "The launch options a launch takes besides the kernel's parameters (num_warps, num_stages, ...), with those "
      "of Triton's backends a launch accepts at their default only (ptx_version, waves_per_eu, ...).");
  m.def("data_address", &data_address, "array"_a,
        "Address of the first element of an object with `__array_struct__` (NumPy arrays).");
  // Weakly referenceable: jit.py keeps, for the kernels warmup returned, what `compiled[grid](...)` launches.
  nb::class_<CompiledKernel>(m, "CompiledKernel", nb::is_weak_referenceable(),
                             "A compiled, loaded kernel, ready to launch.")
      .def_ro("name", &CompiledKernel::name)
      .def_ro("key", &CompiledKernel::key)
      .def_ro("hash", &CompiledKernel::key, "The key, under Triton's name for a compiled kernel's cache hash.")
      .def_ro("from_disk_cache", &CompiledKernel::from_disk_cache)
      .def_ro("warnings", &CompiledKernel::warnings)
      .def_prop_ro(
          "backend", [](const CompiledKernel& k) { return k.backend ? std::string(k.backend->name()) : std::string(); },
          "The name of the backend that built the kernel (runtime/backend_registry.h).")
      .def_prop_ro(
          "backend_kind",
          [](const CompiledKernel& k) {
            return k.backend && k.backend->kind() == backends::BackendKind::Device ? "device" : "host";
          },
          "'host' (runs on this machine's cores; a launch returns when it is done) or 'device' (runs on a "
          "device; a launch is queued on the caller's stream there).")
      .def_prop_ro("params", &param_tuples,
                   "The launch ABI: (name, type, divisibility) per runtime parameter, in order.")
      .def_prop_ro("tensor_maps", &tensor_maps_of,
                   "Device backends with a tensor-copy engine (CUDA sm_90): the tensor maps each launch encodes "
                   "from the arguments and passes after them, one per tensor the TMA copies blocks of.")
      .def_prop_ro("effects", &effects_of,
                   "{pointer parameter: PointerEffects}: which arrays the kernel may read, write or update "
                   "atomically, from the compiler's pointer provenance analysis.")
      .def_prop_ro("stages", &stage_dict,
                   "IR text after each stage, in pipeline order (empty unless keep_stages).")
      .def_prop_ro("source", [](const CompiledKernel& k) { return k.stages.source; },
                   "The generated C++ or CUDA source (empty unless keep_stages).")
      .def_prop_ro("layouts", [](const CompiledKernel& k) { return k.stages.layouts; },
                   "CUDA: the layout of every tile value (empty unless keep_stages).")
      .def_prop_ro("ptx", [](const CompiledKernel& k) { return k.stages.ptx; },
                   "CUDA: the PTX NVRTC made (empty unless keep_stages).")
      .def_prop_ro("compile_log", [](const CompiledKernel& k) { return k.stages.compile_log; },
                   "CUDA: NVRTC's log with ptxas's register and shared memory report (keep_stages).")
      .def_prop_ro(
          "num_threads", [](const CompiledKernel& k) { return k.shape.threads; },
          "Device backends: threads per program (CUDA: per block, 32 * num_warps); 0 for host kernels.")
      .def_prop_ro(
          "shared_bytes", [](const CompiledKernel& k) { return k.shape.shared_bytes; },
          "Device backends: dynamic shared memory per program in bytes.")
      .def_prop_ro("asm", &asm_of,
                   "{name: artefact} as Triton's CompiledKernel.asm: the IR after each stage, the generated source, "
                   "CUDA's layouts, PTX and ptxas report, and the built artifact's bytes (\"so\", \"cubin\"); "
                   "produced on first use when the kernel was compiled without its stages.")
      .def_prop_ro("metadata", &metadata_of,
                   "As Triton's CompiledKernel.metadata: name, num_warps, num_stages, num_ctas, maxnreg, "
                   "enable_fp_fusion, debug, shared (bytes), n_regs and n_spills (None where unknown), ...")
      .def_prop_ro(
          "n_regs", [](const CompiledKernel& k) { return registers_of(k).first; },
          "Registers per thread (CUDA, from ptxas); None on backends without registers to count.")
      .def_prop_ro(
          "n_spills", [](const CompiledKernel& k) { return registers_of(k).second; },
          "Registers spilled to local memory (CUDA: ptxas's spill-store bytes / 4); None where unknown.")
      .def("work", &work_of, "grid"_a, "scalars"_a,
           "The compiler's count of this kernel's work at one launch (passes/work_count.h; docs/profiling.md): "
           "a dict of loaded_bytes, stored_bytes, params ({pointer parameter: (loaded, stored)}), dot_ops, "
           "arithmetic_ops, transcendental_ops, known (False: a trip count the launch does not give), notes "
           "(what was estimated) and text. `scalars`: per runtime parameter its int or bool value, else None.")
      .def("resources", &resources, "device"_a = 0,
           "CUDA: registers, shared and local memory the kernel uses on `device` (a dict).")
      .def_ro("debug", &CompiledKernel::debug,
              "Compiled in debug mode: accesses are bounds-checked and launches raise tegula.DeviceError.")
      .def("launch", &launch, "grid"_a, "args"_a, "stream"_a = nb::none(), "device"_a = 0, "extents"_a = nb::none(),
           "The bare launch: `args` holds one int/float/bool per runtime parameter (addresses for pointers). "
           "Host kernels run the grid and return; device kernels need `stream` (a stream handle on `device`, 0: "
           "the default stream) and return once it is queued. Debug kernels also take `extents`: per "
           "argument (first byte, bytes) of its array, or None.")
      .def("__repr__", [](const CompiledKernel& k) {
        return "<tegula CompiledKernel '" + k.name + "' " + k.key.substr(0, 12) + ">";
      });
}

}  // namespace tegula::python
