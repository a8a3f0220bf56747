// Argument checks and the image copy-out shared by the executable calls.

#include "executable_arguments.h"

#include <cstring>

#include "driver_error.h"

namespace axon::common {

void require_launch_target(Scheduler& scheduler, axon_stream stream, int executable_device, const char* entry_point) {
  int stream_device = -1;
  {
    auto lock = scheduler.lock();
    stream_device = scheduler.find_stream(stream)->device;
  }
  if (stream_device != executable_device) {
    fail(AXON_ERROR_INVALID_HANDLE, "the executable was loaded for device ", executable_device,
         " but the stream belongs to device ", stream_device);
  }
  if (entry_point == nullptr) fail(AXON_ERROR_INVALID_VALUE, "expected an entry point name, got null");
}

void require_bindings(const axon_binding* bindings, std::size_t binding_count) {
  if (binding_count > 0 && bindings == nullptr) {
    fail(AXON_ERROR_INVALID_VALUE, "expected ", binding_count, " bindings, got a null array");
  }
}

void copy_image_out(const std::string& bytes, void* image, std::size_t capacity, std::size_t* image_bytes) {
  *image_bytes = bytes.size();
  if (image == nullptr) return;
  if (capacity < bytes.size()) {
    fail(AXON_ERROR_INVALID_VALUE, "the image needs ", bytes.size(), " bytes, the buffer holds ", capacity);
  }
  std::memcpy(image, bytes.data(), bytes.size());
}

}  // namespace axon::common
