#include "host_execution/adopted_host_buffers.h"

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "axon/memory.h"
#include "axon/runtime.h"
#include "core/check.h"
#include "core/copy_on_write.h"
#include "core/device.h"
#include "core/device_allocator.h"
#include "core/host_waits.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"

namespace axon {
namespace {

// The CPU byte ranges currently adopted, by base address. The driver refuses
// a second import of live bytes, so adopting them again must find and share
// the axon storage already over them; and while an adoption is being set up
// or ended (its storage not yet, or no longer, alive) others wait for it.
struct Adoption {
  uint64_t id = 0;  // tells this adoption from a later one of the same bytes
  size_t bytes = 0;
  c10::DeviceIndex device = -1;
  std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>> storage;  // unset while being set up
};

struct AdoptionRegistry {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<const void*, Adoption> adoptions;
  uint64_t next_id = 1;

  // Removes the adoption `id` of `base` if it is still the one recorded.
  void forget(const void* base, uint64_t id) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      const auto entry = adoptions.find(base);
      if (entry != adoptions.end() && entry->second.id == id) adoptions.erase(entry);
    }
    changed.notify_all();
  }
};

AdoptionRegistry& registry() {
  static auto* instance = new AdoptionRegistry();  // leaked: storages may die at interpreter exit
  return *instance;
}

void* import_host_bytes(void* host_data, size_t bytes, c10::DeviceIndex device) {
  void* device_pointer = nullptr;
  axon_status status = axon_memory_import_host(device, host_data, bytes, &device_pointer);
  if (status == AXON_ERROR_OUT_OF_MEMORY) {
    // Blocks cached by the allocator hold capacity the import may use, as
    // the allocator's own allocations retry after emptying the cache.
    device_allocator()->emptyCache();
    status = axon_memory_import_host(device, host_data, bytes, &device_pointer);
  }
  AXON_CHECK(status, "importing a CPU tensor's bytes as device memory (adopt_host_tensor)");
  return device_pointer;
}

// A new axon storage over `host_storage`'s bytes; the caller has registered
// adoption `id` for them.
c10::Storage import_storage(const c10::Storage& host_storage, void* host_data, c10::DeviceIndex device, uint64_t id) {
  const size_t bytes = host_storage.nbytes();
  void* device_pointer = import_host_bytes(host_data, bytes, device);
  // Runs once no queued work uses the memory any more. Capturing the CPU
  // storage keeps the producer's buffer alive until after the import ends.
  auto end_adoption = [host_storage, host_data, device_pointer, id] {
    axon_memory_free(device_pointer);  // cannot fail for a live import; nothing to report to anyway
    registry().forget(host_data, id);
  };
  c10::DataPtr data_ptr;
  try {
    data_ptr = device_allocator_wrap_external(device_pointer, bytes, device, std::move(end_adoption));
  } catch (...) {
    axon_memory_free(device_pointer);
    throw;
  }
  // Resizable as any fresh axon tensor is (an adopted compiled output stands
  // for one): growing it moves the bytes to a block of the device allocator
  // and ends the import once queued work is done with it.
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), bytes,
                                                            std::move(data_ptr), device_allocator(),
                                                            /*resizable=*/true));
}

c10::Storage adopt_storage(const c10::Storage& host_storage, c10::DeviceIndex device) {
  const size_t bytes = host_storage.nbytes();
  void* host_data = bytes == 0 ? nullptr : host_storage.mutable_data();
  if (host_data == nullptr) {
    // Nothing to import: an empty storage, as the allocator gives for 0 bytes.
    return c10::Storage(c10::Storage::use_byte_size_t(), 0,
                        c10::DataPtr(nullptr, c10::Device(c10::DeviceType::PrivateUse1, device)), device_allocator(),
                        /*resizable=*/true);
  }
  AdoptionRegistry& adopted = registry();
  std::unique_lock<std::mutex> lock(adopted.mutex);
  for (auto entry = adopted.adoptions.find(host_data); entry != adopted.adoptions.end();
       entry = adopted.adoptions.find(host_data)) {
    if (entry->second.storage) {
      if (auto alive = entry->second.storage->lock()) {
        TORCH_CHECK_VALUE(entry->second.device == device && entry->second.bytes == bytes,
                          "[adopt_host_tensor] expected bytes not adopted elsewhere, got a CPU storage of ", bytes,
                          " bytes at ", host_data,
                          " whose bytes are already adopted on axon:", static_cast<int>(entry->second.device), " as a ",
                          entry->second.bytes, "-byte storage; adopt them once and take views of that tensor");
        return c10::Storage(std::move(alive));
      }
    }
    // Being set up, or its last reference just died and its import is ending.
    adopted.changed.wait(lock);
  }
  const uint64_t id = adopted.next_id++;
  adopted.adoptions.emplace(host_data, Adoption{id, bytes, device, std::nullopt});
  lock.unlock();  // the import may empty the allocator's cache, which synchronizes the device

  c10::Storage storage;
  try {
    storage = import_storage(host_storage, host_data, device, id);
  } catch (...) {
    adopted.forget(host_data, id);
    throw;
  }
  lock.lock();
  adopted.adoptions.at(host_data).storage.emplace(storage.getWeakStorageImpl());
  lock.unlock();
  adopted.changed.notify_all();
  return storage;
}

// A tensor of `dispatch_key` over `storage` with `like`'s geometry and flags.
at::Tensor tensor_over(c10::Storage storage, c10::DispatchKey dispatch_key, const at::Tensor& like) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(dispatch_key), like.dtype());
  impl->set_sizes_and_strides(like.sizes(), like.strides(), like.storage_offset());
  at::Tensor tensor(std::move(impl));
  // Lazy conjugation / negation are flags on the tensor, not in the bytes.
  tensor._set_conj(like.is_conj());
  tensor._set_neg(like.is_neg());
  return tensor;
}

}  // namespace

at::Tensor adopt_host_tensor(const at::Tensor& cpu_tensor, c10::DeviceIndex device) {
  TORCH_CHECK_VALUE(cpu_tensor.defined(), "[adopt_host_tensor] expected a CPU tensor, got an undefined tensor");
  TORCH_CHECK_VALUE(cpu_tensor.device().is_cpu(), "[adopt_host_tensor] expected a CPU tensor, got a tensor on ",
                    cpu_tensor.device());
  TORCH_CHECK_VALUE(cpu_tensor.layout() == c10::kStrided, "[adopt_host_tensor] expected a strided tensor, got layout ",
                    cpu_tensor.layout());
  check_device_index(device);
  TORCH_CHECK_NOT_IMPLEMENTED(driver_capability(device, AXON_CAPABILITY_IMPORT_HOST_MEMORY),
                              "[adopt_host_tensor] driver \"", axon_driver_name(),
                              "\" cannot import host memory as device memory: copy the tensor to axon instead");
  return tensor_over(adopt_storage(cpu_tensor.storage(), device), c10::DispatchKey::PrivateUse1, cpu_tensor);
}

at::Tensor owning_host_alias(const at::Tensor& device_tensor) {
  TORCH_CHECK_VALUE(device_tensor.defined(), "[host_alias] expected an axon tensor, got an undefined tensor");
  TORCH_CHECK_VALUE(device_tensor.is_privateuseone() && device_tensor.layout() == c10::kStrided,
                    "[host_alias] expected a strided axon tensor, got a ", device_tensor.layout(), " tensor on ",
                    device_tensor.device());
  TORCH_CHECK_NOT_IMPLEMENTED(host_addressable(device_tensor.device().index()), "[host_alias] the memory of ",
                              device_tensor.device(), " is not host-addressable (driver \"", axon_driver_name(),
                              "\"): copy the tensor to the CPU instead");
  const c10::Storage& device_storage = device_tensor.storage();
  // The caller may write through the alias: a storage shared with a lazy
  // clone gets memory of its own first. The alias never waits for work the
  // caller queued, but this copy the caller did not queue: it waits for it.
  if (is_copy_on_write(device_storage)) {
    materialize_shared_storage(device_storage);
    const c10::DeviceIndex device = device_tensor.device().index();
    AXON_CHECK(wait_for_stream(current_stream_handle(device)), "copying shared memory for a host alias");
  }
  void* host_data = nullptr;
  if (device_storage.data() != nullptr) {
    AXON_CHECK(axon_memory_host_view(device_storage.data(), &host_data), "mapping device memory to the host");
  }
  auto* owner = new c10::Storage(device_storage);
  c10::DataPtr data_ptr(
      host_data, owner, [](void* context) { delete static_cast<c10::Storage*>(context); }, c10::Device(c10::kCPU));
  c10::Storage host_storage(c10::Storage::use_byte_size_t(), device_storage.nbytes(), std::move(data_ptr),
                            /*allocator=*/nullptr, /*resizable=*/false);
  return tensor_over(std::move(host_storage), c10::DispatchKey::CPU, device_tensor);
}

}  // namespace axon
