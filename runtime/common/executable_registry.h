// The objects behind axon_executable handles, and each driver's registry of
// the live ones, so a destroyed or foreign handle is refused instead of used.
//
// axon/executable.h names the handle's type, axon_executable_object, and
// leaves it to the driver. Here it is a base holding the device the executable
// was loaded for; a driver derives its own with its program. The virtual
// destructor lets axon_executable_destroy, written once here, delete any of
// them.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_set>

#include "axon/executable.h"
#include "boundary.h"

struct axon_executable_object {
  explicit axon_executable_object(int device) : device(device) {}
  virtual ~axon_executable_object() = default;
  axon_executable_object(const axon_executable_object&) = delete;
  axon_executable_object& operator=(const axon_executable_object&) = delete;

  const int device;  // launches go to streams of this device
};

namespace axon::common {

// One registry per driver type. Thread-safe.
template <typename Driver>
class ExecutableRegistry {
 public:
  // Makes `executable` live and hands it out as a handle.
  static axon_executable adopt(std::unique_ptr<axon_executable_object> executable) {
    Live& live = instance();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.handles.insert(executable.get());
    return executable.release();
  }

  // The live executable behind the handle (never null), as the driver's own
  // type; throws AXON_ERROR_INVALID_HANDLE for a null, destroyed or foreign
  // handle.
  template <typename Executable>
  static Executable* find(axon_executable executable) {
    Live& live = instance();
    std::lock_guard<std::mutex> lock(live.mutex);
    if (live.handles.count(executable) == 0) refuse(executable);
    return static_cast<Executable*>(executable);
  }

  // The table's axon_executable_destroy slot.
  static axon_status axon_executable_destroy(axon_executable executable) {
    return guarded_call(__func__, [&] {
      {
        Live& live = instance();
        std::lock_guard<std::mutex> lock(live.mutex);
        // Found and forgotten in one step, so two racing destroys delete once.
        if (live.handles.erase(executable) == 0) refuse(executable);
      }
      delete executable;  // queued launches keep the program through their own reference
      return AXON_SUCCESS;
    });
  }

 private:
  struct Live {
    std::mutex mutex;
    std::unordered_set<axon_executable_object*> handles;
  };

  static Live& instance() {
    static auto* live = new Live();  // leaked, like the driver
    return *live;
  }

  [[noreturn]] static void refuse(axon_executable executable) {
    fail(AXON_ERROR_INVALID_HANDLE, "executable ", static_cast<const void*>(executable),
         " is not a live executable of this driver (null, destroyed or foreign)");
  }
};

}  // namespace axon::common
