// `tegula aot`: a kernel built ahead of time for one signature, and a C
// header that launches it from a program with no Python and no compiler at
// run time (docs/cli.md, "Ahead of time"). The host backend's artifact is a
// shared object the header opens with dlopen; a device backend's is a CUDA
// image the header loads through the driver (libcuda, also through dlopen).
// Each launch packs the arguments into the kernel ABI's slots
// (backends/kernel_abi.h).
#pragma once

#include <string>

#include "backends/backend.h"
#include "frontend/request.h"
#include "runtime/compiler.h"

namespace tegula::tools {

struct AotFiles {
  std::string artifact;  // DIR/NAME.so (host) or DIR/NAME.cubin (device)
  std::string header;    // DIR/NAME.h
};

// Whether `name` can name the header's C functions ([A-Za-z_][A-Za-z0-9_]*).
bool is_c_identifier(const std::string& name);

// Builds `request` into DIR/NAME.<artifact extension> and writes DIR/NAME.h.
// `origin` (the kernel file and signature) is quoted in the header's comment.
// Throws Error as runtime::compile does; std::invalid_argument for what the
// command line got wrong (a device backend without --arch, a debug build).
AotFiles write_aot(const frontend::KernelRequest& request, const runtime::CompileOptions& options,
                   const std::string& dir, const std::string& name, const std::string& origin);

// The header's text, for a kernel whose artifact file is named `artifact_file`:
// a host backend's shared object, or a device backend's image for `arch`.
std::string host_aot_header(const backends::KernelInfo& info, const std::string& name, const std::string& origin,
                            const std::string& artifact_file);
std::string device_aot_header(const backends::KernelInfo& info, const std::string& name, const std::string& origin,
                              const std::string& artifact_file, int arch);

}  // namespace tegula::tools
