#include "host_execution/cpu_kernel_vectors.h"

#include <ATen/Version.h>

#include <string>

namespace axon {

int cpu_kernel_float_lanes() {
  static const int lanes = [] {
    const std::string capability = at::get_cpu_capability();
    if (capability == "DEFAULT") return 0;
    return capability.rfind("AVX512", 0) == 0 ? 16 : 8;
  }();
  return lanes;
}

}  // namespace axon
