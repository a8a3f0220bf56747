#include "core/copy_on_write.h"

#include <c10/core/DeviceGuard.h>

namespace axon {

void materialize_shared_storage(const c10::Storage& storage) {
  // ATen's materialization allocates on the current device and copies on its
  // current stream: both must be the storage's.
  const c10::DeviceGuard guard(storage.device());
  static_cast<void>(const_cast<c10::Storage&>(storage).mutable_data());
}

}  // namespace axon
