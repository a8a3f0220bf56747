// The axon random number generator: counter-based Philox4x32-10 state.
//
// State is (seed, offset) and nothing else, as on CUDA, so that
// get_state()/set_state() exchange 16 bytes (seed then offset, native
// uint64) and DTensor's RNG tracker, torch.manual_seed and fork_rng work
// unchanged. A random kernel reserves a range of Philox counters (the offset,
// counted in blocks of four 32-bit draws) and element i of its output draws
// from block offset + i / 4, so results do not depend on threading.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <mutex>
#include <utility>

namespace axon {

class AxonGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit AxonGeneratorImpl(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;  // draws a fresh non-deterministic seed
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // Returns (seed, first block) and advances the offset by `blocks`. Takes
  // GeneratorImpl::mutex_ (the lock at::Generator::mutex() exposes), so it
  // must not be called with that lock held.
  std::pair<uint64_t, uint64_t> reserve_blocks(uint64_t blocks);

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  AxonGeneratorImpl* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex device);
at::Generator make_generator(c10::DeviceIndex device);

// The generator a random kernel uses: `requested` if given (must be an axon
// generator), else the default generator of `device`.
AxonGeneratorImpl* resolve_generator(const std::optional<at::Generator>& requested, c10::DeviceIndex device);

}  // namespace axon
