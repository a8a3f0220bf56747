// Compares axon_uniform_rand_lanes (torch_axon/inductor/philox_lanes.h) with
// what Inductor's CPU kernels compute per element, normalized_rand_cpu(seed,
// offset): PyTorch's own Philox engine, its first word scaled to [0, 1).
// Built by tests/test_inductor_random.py once per instruction set; prints the
// count of differing floats and exits non-zero if there is any.
#include <ATen/core/PhiloxRNGEngine.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "philox_lanes.h"

namespace {

float pytorch_uniform(std::uint32_t seed, std::uint32_t offset) {
  return static_cast<float>(at::Philox4_32(seed, 0, offset)() & 0x7FFFFFFFu) * 4.6566127342e-10f;
}

// 24 lanes: whole vectors of either instruction set and, for 16-lane
// vectors, a scalar tail.
constexpr int kLanes = 24;

}  // namespace

int main() {
  std::mt19937_64 generator(7);
  long differing = 0;
  long compared = 0;
  // Seeds and offsets wider than 32 bits are truncated, as the parameters of
  // normalized_rand_cpu do.
  const std::uint64_t seeds[] = {0, 1, 0xFFFFFFFFull, 0x123456789ABCDEFull};
  for (const std::uint64_t seed : seeds) {
    for (int block = 0; block < 2000; ++block) {
      std::int64_t offsets[kLanes];
      for (int lane = 0; lane < kLanes; ++lane) {
        // The first blocks cross the 32-bit offset boundary, the rest are random.
        offsets[lane] = block < 4 ? static_cast<std::int64_t>(0xFFFFFFC0ull + block * kLanes + lane)
                                  : static_cast<std::int64_t>(generator());
      }
      float lanes[kLanes];
      axon_uniform_rand_lanes<kLanes>(seed, offsets, lanes);
      for (int lane = 0; lane < kLanes; ++lane) {
        const float expected =
            pytorch_uniform(static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(offsets[lane]));
        differing += std::memcmp(&lanes[lane], &expected, sizeof(float)) != 0;
        ++compared;
      }
    }
  }
  std::printf("%ld of %ld differ\n", differing, compared);
  return differing == 0 ? 0 : 1;
}
