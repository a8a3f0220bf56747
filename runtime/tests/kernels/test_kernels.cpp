// Entry points of the test executable (format "host-shared-object"), built as
// a shared object whose bytes the executable tests load.

#include <cstdio>
#include <cstring>

#include "axon/formats/host_shared_object.h"

#define AXON_TEST_ENTRY extern "C" __attribute__((visibility("default"))) int

// out[i] = scale * a[i] + b[i]; bindings a, b, out (floats); constants: float scale.
AXON_TEST_ENTRY scaled_add(const axon_host_dispatch* dispatch, char* message) {
  if (dispatch->binding_count != 3 || dispatch->constant_bytes != sizeof(float)) {
    std::snprintf(message, 128, "scaled_add expects 3 bindings and a float, got %zu and %zu bytes",
                  dispatch->binding_count, dispatch->constant_bytes);
    return 1;
  }
  float scale = 0;
  std::memcpy(&scale, dispatch->constants, sizeof(scale));
  const auto* a = static_cast<const float*>(dispatch->bindings[0]);
  const auto* b = static_cast<const float*>(dispatch->bindings[1]);
  auto* out = static_cast<float*>(dispatch->bindings[2]);
  const size_t count = dispatch->binding_bytes[2] / sizeof(float);
  for (size_t i = 0; i < count; ++i) out[i] = scale * a[i] + b[i];
  return 0;
}

// Always fails, with a message naming itself.
AXON_TEST_ENTRY always_fails(const axon_host_dispatch*, char* message) {
  std::snprintf(message, 64, "always_fails failed on purpose");
  return 1;
}
