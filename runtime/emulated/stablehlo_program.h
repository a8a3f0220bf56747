// Executables in format "stablehlo-mlir" (AXON_FORMAT_STABLEHLO): StableHLO
// text compiled at load by XLA's CPU compiler through its PJRT plugin
// (runtime/pjrt), run on the device's worker over device memory in place.
//
// The module's public @main takes and returns statically shaped tensors
// (written `tensor<2x3xf32>`); a launch names entry point "main" and binds
// each argument, then each result, in order: the results are written into
// their bindings. The plugin's path is AXON_PJRT_CPU_PLUGIN; without it the
// format is not supported.
//
// Such an executable serializes (axon_executable_serialize) to format
// "xla-cpu-executable" (AXON_EMULATED_FORMAT_XLA_CPU): XLA's compiled program
// with @main's signature, loaded again without compiling by the same plugin
// build (another build's image is refused as AXON_ERROR_INVALID_VALUE).
#pragma once

#include <memory>
#include <string>

#include "loaded_program.h"

#define AXON_EMULATED_FORMAT_XLA_CPU "xla-cpu-executable"

namespace axon::emulated {

// Whether the format can be loaded (the plugin is configured and loads).
bool stablehlo_supported();

// Compiles `text`. Throws DriverError: AXON_ERROR_NOT_SUPPORTED without a
// plugin, AXON_ERROR_INVALID_VALUE for a module XLA or the signature reader
// refuses (with the compiler's message).
std::shared_ptr<LoadedProgram> load_stablehlo(const std::string& text);

// Loads an image written by a "stablehlo-mlir" program's serialize. Throws
// DriverError: AXON_ERROR_NOT_SUPPORTED without a plugin,
// AXON_ERROR_INVALID_VALUE for a damaged image or one from another plugin build.
std::shared_ptr<LoadedProgram> load_xla_cpu_image(const std::string& image);

}  // namespace axon::emulated
