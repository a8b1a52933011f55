// The builtin registry (frontend/builtins.h) against the op table and the
// Python stubs of the language: every name a kernel can write as tl.<name>
// has a stub in python/tegula/language (tegula.language, tl.math,
// tl.extra.libdevice or tl.extra.cuda: one namespace), every stub names a
// registry row, and every elementwise float op of ir/ops.def can be called
// by its name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "frontend/builtins.h"
#include "ir/ops.h"

using namespace tegula;
using frontend::Builtin;

namespace {

const std::filesystem::path kLanguage = std::filesystem::path(TEGULA_SOURCE_DIR) / "python" / "tegula" / "language";

// The stub files and the names they define at top level (`def name(` and
// `class name`), private ones included: Triton's tl.core._unwrap_if_constexpr
// is a tl name with a leading underscore.
std::set<std::string> stub_names() {
  std::set<std::string> names;
  const std::regex definition(R"(^(?:def|class) (\w+))");
  for (const char* file : {"core.py", "ops.py", "math.py", "extra/libdevice.py", "extra/cuda.py"}) {
    std::ifstream in(kLanguage / file);
    EXPECT_TRUE(in.good()) << "cannot read " << (kLanguage / file);
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
      if (std::regex_search(line, m, definition)) names.insert(m[1]);
  }
  return names;
}

// Stubs that are not functions a kernel calls: types, the PropagateNan
// namespace (tl.PropagateNan.ALL is read by the front end as a constant),
// the helper the stubs raise with, and host functions (str_to_ty: a dtype
// from a type string, for host code as in Triton).
// Host functions of the language modules (constexpr functions call get_int_dtype on the host).
const std::set<std::string> kNotCalls = {"dtype", "tensor", "tensor_descriptor", "PropagateNan", "only_in_kernel",
                                         "str_to_ty", "get_int_dtype"};

bool written_as_tl(const Builtin& b) { return (b.forms & frontend::kLanguage) != 0; }

}  // namespace

TEST(BuiltinRegistry, NamesAreUniqueAndFormsConsistent) {
  std::set<std::string> seen;
  for (const Builtin& b : frontend::builtin_registry()) {
    std::string name = b.name;
    EXPECT_TRUE(seen.insert(name).second) << name << " is registered twice";
    bool prefixed = name.find('.') != std::string::npos;
    // A prefixed name ("py.min", "tegula.cdiv", "tensor_descriptor.atomic_add") is reached only by its prefix.
    if (prefixed) {
      EXPECT_EQ(b.forms, 0) << name;
    }
    // Methods are tl functions too, except those Triton's tensor has only as
    // methods: `to`, `item`, logical_and/logical_or and the operators by name (`__add__`).
    bool method_only = name == "to" || name == "item" || name == "logical_and" || name == "logical_or" ||
                       name.starts_with("__");
    if ((b.forms & frontend::kMethod) != 0 && !method_only) {
      EXPECT_TRUE(written_as_tl(b)) << name;
    }
    EXPECT_EQ(frontend::find_builtin(name), &b);
  }
  EXPECT_EQ(frontend::find_builtin("no_such_builtin"), nullptr);
  // Supported, also as a method (it once had a stale "not supported yet" entry too).
  const Builtin* xor_sum = frontend::find_builtin("xor_sum");
  ASSERT_NE(xor_sum, nullptr);
  EXPECT_NE(xor_sum->lower, nullptr);
  EXPECT_NE(xor_sum->forms & frontend::kMethod, 0);
}

TEST(BuiltinRegistry, EveryTlNameHasAPythonStub) {
  std::set<std::string> stubs = stub_names();
  ASSERT_TRUE(stubs.count("load") && stubs.count("cdiv") && stubs.count("tan") && stubs.count("dtype"))
      << "the stub files were not read";
  for (const Builtin& b : frontend::builtin_registry()) {
    if (written_as_tl(b)) {
      EXPECT_TRUE(stubs.count(b.name)) << "tl." << b.name << " has no stub in " << kLanguage;
    }
  }
}

TEST(BuiltinRegistry, EveryPythonStubIsRegistered) {
  for (const std::string& name : stub_names()) {
    // The stub files' own helpers (`_unwrapped`, `__getattr__`) are private and no calls, but for the
    // private tl names Triton has.
    if (kNotCalls.count(name) || (name.starts_with("_") && name != "_unwrap_if_constexpr")) continue;
    const Builtin* b = frontend::find_builtin(name);
    EXPECT_TRUE(b != nullptr && written_as_tl(*b))
        << "the stub tl." << name << " names no tl builtin (register it, with a null handler if Tegula lacks it)";
  }
}

// Adding an elementwise float op to ir/ops.def makes it callable only with
// a registry row of its name (docs/ir.md, "Adding an op").
TEST(BuiltinRegistry, EveryFloatOpIsCallableByItsName) {
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    auto kind = static_cast<ir::OpKind>(i);
    if (ir::info(kind).rule != ir::TypeRule::Floats) continue;
    const Builtin* b = frontend::find_builtin(ir::name(kind));
    ASSERT_NE(b, nullptr) << "no builtin calls the op `" << ir::name(kind) << "`";
    EXPECT_TRUE(written_as_tl(*b) && b->lower != nullptr) << ir::name(kind);
  }
}
