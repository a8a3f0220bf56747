#include "core/generator.h"

#include <ATen/Utils.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/CallOnce.h>

#include <cstring>
#include <deque>
#include <random>

#include "core/device.h"

namespace axon {
namespace {
constexpr size_t kStateBytes = 2 * sizeof(uint64_t);
}  // namespace

AxonGeneratorImpl::AxonGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void AxonGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t AxonGeneratorImpl::current_seed() const { return seed_; }

uint64_t AxonGeneratorImpl::seed() {
  std::random_device entropy;
  const uint64_t fresh = (static_cast<uint64_t>(entropy()) << 32) | entropy();
  set_current_seed(fresh);
  return fresh;
}

void AxonGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }

uint64_t AxonGeneratorImpl::get_offset() const { return offset_; }

c10::intrusive_ptr<c10::TensorImpl> AxonGeneratorImpl::get_state() const {
  auto state = at::detail::empty_cpu({static_cast<int64_t>(kStateBytes)}, c10::ScalarType::Byte, std::nullopt,
                                     std::nullopt, std::nullopt, std::nullopt);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, sizeof(uint64_t));
  std::memcpy(bytes + sizeof(uint64_t), &offset_, sizeof(uint64_t));
  return state.getIntrusivePtr();
}

void AxonGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  at::detail::check_rng_state(new_state);
  TORCH_CHECK_VALUE(static_cast<size_t>(new_state.numel()) == kStateBytes, "[axon] RNG state must be ", kStateBytes,
                    " bytes (seed, offset), got ", new_state.numel());
  const auto* bytes = new_state.data_dtype_initialized<uint8_t>();
  std::memcpy(&seed_, bytes, sizeof(uint64_t));
  std::memcpy(&offset_, bytes + sizeof(uint64_t), sizeof(uint64_t));
}

std::pair<uint64_t, uint64_t> AxonGeneratorImpl::reserve_blocks(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t first = offset_;
  offset_ += blocks;
  return {seed_, first};
}

AxonGeneratorImpl* AxonGeneratorImpl::clone_impl() const {
  auto* copy = new AxonGeneratorImpl(device().index(), seed_);
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag created;
  static std::deque<at::Generator>* generators = nullptr;
  std::call_once(created, [] {
    generators = new std::deque<at::Generator>();
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      generators->push_back(at::make_generator<AxonGeneratorImpl>(i));
    }
  });
  device = resolve_device_index(device);
  return generators->at(device);
}

at::Generator make_generator(c10::DeviceIndex device) {
  return at::make_generator<AxonGeneratorImpl>(resolve_device_index(device));
}

AxonGeneratorImpl* resolve_generator(const std::optional<at::Generator>& requested, c10::DeviceIndex device) {
  if (requested.has_value() && requested->defined()) {
    TORCH_CHECK_VALUE(requested->device().type() == c10::DeviceType::PrivateUse1,
                      "[axon] expected a generator for device axon, got one for ", requested->device(),
                      " (create it with torch.Generator(device='axon'))");
    return at::check_generator<AxonGeneratorImpl>(requested);
  }
  return at::check_generator<AxonGeneratorImpl>(default_generator(device));
}

}  // namespace axon
