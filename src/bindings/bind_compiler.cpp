// Requests, options and the compile entry points.
//
// The Python side builds a KernelRequest only on a cache miss of its
// in-memory launch cache, so these bindings favour plain, explicit structs
// (keyword constructors, read-write fields) over speed.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "backends/cpu/thread_pool.h"
#include "backends/cpu/toolchain.h"
#include "frontend/lower.h"
#include "bindings/bindings.h"
#include "runtime/backend_registry.h"
#include "runtime/compiler.h"
#include "support/spelling.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tegula::python {
namespace {

// A container member reads from Python as a copy of its elements. Read by
// reference (def_rw), the elements of the list pointed into the container, so
// assigning the member back (`specs = request.args; ...; request.args = specs`)
// freed the storage they pointed into, and a later write through one of them
// corrupted memory.
template <class C, class T>
auto copied(T C::*member) {
  return [member](const C& owner) { return owner.*member; };
}

template <class C, class T>
auto assigned(T C::*member) {
  return [member](C& owner, T value) { owner.*member = std::move(value); };
}


using frontend::ArgSpec;
using frontend::FunctionSource;
using frontend::GlobalValue;
using frontend::KernelRequest;

ir::Scalar scalar_from_name(const std::string& name) {
  ir::Scalar s;
  if (!ir::parse_scalar(name, &s))
    throw nb::value_error(("unknown scalar type '" + name + "'").c_str());
  return s;
}

void bind_global_value(nb::module_& m) {
  nb::class_<GlobalValue> cls(m, "GlobalValue",
                              "A global name visible to a kernel, resolved on the host side.");
  nb::enum_<GlobalValue::Kind>(cls, "Kind")
      .value("Int", GlobalValue::Kind::Int)
      .value("Float", GlobalValue::Kind::Float)
      .value("Bool", GlobalValue::Kind::Bool)
      .value("None_", GlobalValue::Kind::None)
      .value("Str", GlobalValue::Kind::Str)
      .value("DType", GlobalValue::Kind::DType)
      .value("Language", GlobalValue::Kind::Language)
      .value("Tegula", GlobalValue::Kind::Tegula)
      .value("JitFunction", GlobalValue::Kind::JitFunction)
      .value("Opaque", GlobalValue::Kind::Opaque)
      .value("LanguageMember", GlobalValue::Kind::LanguageMember)
      .value("Tuple", GlobalValue::Kind::Tuple)
      .value("ConstexprFunction", GlobalValue::Kind::ConstexprFunction)
      .value("NamedTupleType", GlobalValue::Kind::NamedTupleType)
      .value("AggregateType", GlobalValue::Kind::AggregateType)
      .value("HostModule", GlobalValue::Kind::HostModule)
      .value("StandIn", GlobalValue::Kind::StandIn);
  cls.def(
         "__init__",
         [](GlobalValue* self, GlobalValue::Kind kind, int64_t int_value, double float_value,
            std::string text, int32_t function) {
           new (self) GlobalValue{kind, int_value, float_value, std::move(text), function};
         },
         "kind"_a = GlobalValue::Kind::None, "int_value"_a = 0, "float_value"_a = 0.0,
         "text"_a = "", "function"_a = -1)
      .def_rw("kind", &GlobalValue::kind)
      .def_rw("int_value", &GlobalValue::int_value)
      .def_rw("float_value", &GlobalValue::float_value)
      .def_rw("text", &GlobalValue::text)
      .def_rw("function", &GlobalValue::function)
      .def_prop_rw("elements", copied(&GlobalValue::elements), assigned(&GlobalValue::elements));
}

void bind_function_source(nb::module_& m) {
  nb::class_<FunctionSource>(m, "FunctionSource", "One @jit function's source and its globals.")
      .def(
          "__init__",
          [](FunctionSource* self, std::string name, std::string filename, std::string source,
             int32_t first_line, std::map<std::string, GlobalValue> globals) {
            new (self) FunctionSource{std::move(name), std::move(filename), std::move(source),
                                      first_line, std::move(globals)};
          },
          "name"_a, "filename"_a, "source"_a, "first_line"_a = 1,
          "globals"_a = std::map<std::string, GlobalValue>{})
      .def_rw("name", &FunctionSource::name)
      .def_rw("filename", &FunctionSource::filename)
      .def_rw("source", &FunctionSource::source)
      .def_rw("first_line", &FunctionSource::first_line)
      .def_prop_rw("globals", copied(&FunctionSource::globals), assigned(&FunctionSource::globals))
      .def_rw("must_use_result", &FunctionSource::must_use_result);
}

void bind_arg_spec(nb::module_& m) {
  nb::class_<ArgSpec> cls(m, "ArgSpec", "How one kernel parameter is bound at a launch.");
  nb::enum_<ArgSpec::Kind>(cls, "Kind")
      .value("Pointer", ArgSpec::Kind::Pointer)
      .value("Int", ArgSpec::Kind::Int)
      .value("Float", ArgSpec::Kind::Float)
      .value("Bool", ArgSpec::Kind::Bool)
      .value("Constexpr", ArgSpec::Kind::Constexpr)
      .value("TensorDescriptor", ArgSpec::Kind::TensorDescriptor)
      .value("Tuple", ArgSpec::Kind::Tuple);
  cls.def(
         "__init__",
         [](ArgSpec* self, ArgSpec::Kind kind, const std::string& dtype, int64_t divisibility,
            bool is_one, GlobalValue value) {
           new (self) ArgSpec{kind, scalar_from_name(dtype), divisibility, is_one, std::move(value)};
         },
         "kind"_a, "dtype"_a = "i32", "divisibility"_a = 1, "is_one"_a = false,
         "value"_a = GlobalValue{})
      .def_rw("kind", &ArgSpec::kind)
      .def_prop_rw(
          "dtype", [](const ArgSpec& a) { return std::string(ir::to_string(a.dtype)); },
          [](ArgSpec& a, const std::string& name) { a.dtype = scalar_from_name(name); })
      .def_rw("divisibility", &ArgSpec::divisibility)
      .def_rw("is_one", &ArgSpec::is_one)
      .def_rw("typed_one", &ArgSpec::typed_one,
              "With is_one: the 1 is a value of dtype (a declared parameter type), not an untyped constant.")
      .def_rw("value", &ArgSpec::value)
      .def_prop_rw("parts", copied(&ArgSpec::parts), assigned(&ArgSpec::parts))
      .def_rw("block_shape", &ArgSpec::block_shape)
      .def_rw("by_value_bytes", &ArgSpec::by_value_bytes,
              "Pointer: the bytes of a host TMA descriptor the launch passes by value (Triton's nvTmaDesc); 0 "
              "otherwise.");
}

void bind_request_and_options(nb::module_& m) {
  nb::class_<KernelRequest>(m, "KernelRequest",
                            "What the compiler gets: sources (functions[0] is the kernel), "
                            "the argument specialization, and the debug flag.")
      .def(
          "__init__",
          [](KernelRequest* self, std::vector<FunctionSource> functions, std::vector<ArgSpec> args,
             bool debug) {
            new (self) KernelRequest{std::move(functions), std::move(args), debug, {}};
          },
          "functions"_a, "args"_a, "debug"_a = false)
      .def_prop_rw("functions", copied(&KernelRequest::functions), assigned(&KernelRequest::functions))
      .def_prop_rw("args", copied(&KernelRequest::args), assigned(&KernelRequest::args))
      .def_rw("debug", &KernelRequest::debug)
      .def_rw("name", &KernelRequest::name, "the compiled kernel's name; empty: the kernel function's")
      .def_rw("num_warps", &KernelRequest::num_warps);

  nb::class_<runtime::CompileOptions>(m, "CompileOptions")
      .def(
          "__init__",
          [](runtime::CompileOptions* self, std::string backend, bool debug, bool keep_stages,
             std::string cache_dir, int num_warps, int device, int cuda_arch, bool fp_fusion, int num_stages,
             int maxnreg, bool always_compile) {
            new (self) runtime::CompileOptions{std::move(backend), debug, keep_stages, std::move(cache_dir),
                                               num_warps, device, cuda_arch, fp_fusion, num_stages, maxnreg,
                                               always_compile};
          },
          "backend"_a = "cpu", "debug"_a = false, "keep_stages"_a = false, "cache_dir"_a = "",
          "num_warps"_a = 4, "device"_a = 0, "cuda_arch"_a = 0, "fp_fusion"_a = true, "num_stages"_a = 3,
          "maxnreg"_a = 0, "always_compile"_a = false)
      .def_rw("backend", &runtime::CompileOptions::backend)
      .def_rw("debug", &runtime::CompileOptions::debug)
      .def_rw("keep_stages", &runtime::CompileOptions::keep_stages)
      .def_rw("cache_dir", &runtime::CompileOptions::cache_dir)
      .def_rw("num_warps", &runtime::CompileOptions::num_warps)
      .def_rw("device", &runtime::CompileOptions::device)
      .def_rw("cuda_arch", &runtime::CompileOptions::cuda_arch)
      .def_rw("fp_fusion", &runtime::CompileOptions::fp_fusion)
      .def_rw("num_stages", &runtime::CompileOptions::num_stages)
      .def_rw("maxnreg", &runtime::CompileOptions::maxnreg)
      .def_rw("always_compile", &runtime::CompileOptions::always_compile);
}

// `request` with its host calls going to Python: tegula._globals.call_constexpr_function
// runs the @constexpr_function under the GIL (the compile itself runs without it) and
// returns (result, None) or (None, the message to report).
KernelRequest with_host_calls(const KernelRequest& request) {
  KernelRequest out = request;
  out.call_host = [](const std::string& reference, const std::vector<GlobalValue>& args,
                     const std::vector<std::pair<std::string, GlobalValue>>& keywords) -> GlobalValue {
    nb::gil_scoped_acquire gil;
    nb::tuple answer;
    try {
      nb::object call = nb::module_::import_("tegula._globals").attr("call_constexpr_function");
      nb::dict named;
      for (const auto& [name, value] : keywords) named[nb::str(name.c_str())] = nb::cast(value);
      answer = nb::cast<nb::tuple>(call(reference, nb::cast(args), named));
    } catch (const nb::python_error& e) {
      throw frontend::HostCallError(std::string("could not be called: ") + e.what());
    }
    if (!answer[1].is_none()) throw frontend::HostCallError(nb::cast<std::string>(answer[1]));
    return nb::cast<GlobalValue>(answer[0]);
  };
  return out;
}

// (name, is_constexpr, has_default) per parameter, as written.
using SignatureTuple = std::tuple<std::string, bool, bool>;

std::vector<SignatureTuple> parse_signature(const FunctionSource& fn) {
  SourceManager sources;
  std::vector<frontend::SignatureParam> params;
  try {
    params = frontend::parse_signature(fn, sources);
  } catch (const UserError& e) {
    throw tegula::to_error(e.diagnostic(), &sources);
  }
  std::vector<SignatureTuple> out;
  out.reserve(params.size());
  for (const auto& p : params) out.emplace_back(p.name, p.is_constexpr, p.has_default);
  return out;
}

std::string cache_directory(const runtime::CompileOptions& options) {
  try {
    return runtime::cache_directory(options);
  } catch (const UserError& e) {
    throw tegula::to_error(e.diagnostic(), nullptr);
  }
}

}  // namespace

void bind_compiler(nb::module_& m) {
  bind_global_value(m);
  bind_function_source(m);
  bind_arg_spec(m);
  bind_request_and_options(m);

  // Compiling may run the system C++ compiler for seconds: let other Python
  // threads run meanwhile (the request is a C++ copy, so nothing is shared).
  m.def(
      "compile",
      [](const KernelRequest& request, const runtime::CompileOptions& options) {
        KernelRequest hosted = with_host_calls(request);
        nb::gil_scoped_release released;
        return runtime::compile(hosted, options);
      },
      "request"_a, "options"_a,
      "Compiles (or loads from the disk cache) the kernel of `request`.");
  m.def(
      "compile_with_profile",
      [](const KernelRequest& request, const runtime::CompileOptions& options) {
        tegula::CompileProfile profile;
        std::shared_ptr<runtime::CompiledKernel> kernel;
        KernelRequest hosted = with_host_calls(request);
        {
          nb::gil_scoped_release released;
          kernel = runtime::compile(hosted, options, &profile);
        }
        std::vector<std::tuple<std::string, double>> phases;
        for (const auto& phase : profile.phases) phases.emplace_back(phase.name, phase.seconds);
        return std::make_tuple(kernel, phases);
      },
      "request"_a, "options"_a,
      "compile() that also returns where the time went: (kernel, [(phase, seconds), ...]); see "
      "src/support/compile_profile.h for the phases.");
  m.def(
      "generate_source",
      [](const KernelRequest& request, const runtime::CompileOptions& options) {
        runtime::GeneratedSource generated = runtime::generate_source(with_host_calls(request), options);
        return std::make_tuple(std::move(generated.source), std::move(generated.layouts));
      },
      "request"_a, "options"_a,
      "The generated source of `request` without building it: (source, layouts); layouts is empty for "
      "the CPU backend. CUDA needs options.cuda_arch (or a device).");
  m.def("cache_key", &runtime::cache_key, "request"_a, "options"_a,
        "The hex sha256 cache key of a request: everything that affects the produced code.");
  m.def("cache_directory", &cache_directory, "options"_a,
        "The resolved kernel cache directory (created 0700 when missing).");
  m.def(
      "closest_name",
      [](const std::string& word, const std::vector<std::string>& candidates) { return closest_name(word, candidates); },
      "word"_a, "candidates"_a,
      "The candidate a misspelled `word` most likely meant (the compiler's did-you-mean), or None.");
  m.def(
      "cpu_toolchain",
      []() {
        const backends::cpu::Toolchain& t = backends::cpu::toolchain();
        return std::make_tuple(t.compiler, t.identity, t.flags);
      },
      "The C++ compiler the CPU backend builds kernels with: (path, identity, flags). Raises when none "
      "is found.");
  m.def(
      "cpu_thread_count", []() { return backends::cpu::ThreadPool::global().size(); },
      "The threads a CPU launch runs its programs on (TEGULA_NUM_THREADS, else the usable cores).");
  m.def("parse_signature", &parse_signature, "function"_a,
        "The parameters of a kernel as written: a list of (name, is_constexpr, has_default).");
  m.def(
      "backends",
      []() {
        std::vector<std::string> names;
        for (const backends::Backend* backend : runtime::all_backends()) names.emplace_back(backend->name());
        return names;
      },
      "The names of the backends of this build, the host backend first (runtime/backend_registry.h).");
  m.def(
      "backend_kind",
      [](const std::string& name) {
        return runtime::backend_named(name).kind() == backends::BackendKind::Device ? "device" : "host";
      },
      "name"_a,
      "'host' (kernels run on this machine's cores and a launch returns when they are done) or 'device' "
      "(kernels run on a device, queued on the caller's stream) for a backend's name.");
  m.def(
      "stats",
      []() {
        const runtime::Stats& s = runtime::stats();
        nb::dict d;
        d["builds"] = s.builds.load();
        d["reused"] = s.reused.load();
        d["disk_hits"] = s.disk_hits.load();
        d["disk_rejected"] = s.disk_rejected.load();
        d["frontend_runs"] = s.frontend_runs.load();
        return d;
      },
      "Process-wide compiler counters: builds, reused, disk_hits, disk_rejected, frontend_runs.");
}

}  // namespace tegula::python
