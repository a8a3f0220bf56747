#include "host_execution/compiled_code_cores.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "axon/formats/host_shared_object.h"

// From libgomp, which libtorch_cpu loads (omp.h is not among PyTorch's headers).
extern "C" int omp_get_thread_num(void);
extern "C" int omp_get_num_threads(void);

namespace axon {
namespace {

// The parked region's team size, once it has run (0 before).
std::atomic<int> team_size{0};

// The parked team's thread: one parallel region (its helper then sleeps at
// libgomp's dock for good), then a wait that never ends. This file is built
// with OpenMP and, like the kernels' files, resolves to the libgomp that
// libtorch_cpu loaded.
void park_team() {
  pthread_setname_np(pthread_self(), "axon-omp-park");
  // The region must do something: GCC drops an empty one, and no team starts.
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 0) team_size.store(omp_get_num_threads());
  }
  // Leaked: a condition variable destroyed at exit would wait for this thread, which never stops waiting.
  static auto* mutex = new std::mutex();
  static auto* never = new std::condition_variable();
  std::unique_lock<std::mutex> lock(*mutex);
  never->wait(lock, [] { return false; });
}

}  // namespace

void free_cores_for_compiled_code(const char* executable_format) {
  // A host shared object's code runs on the worker itself, with its OpenMP team.
  if (std::strcmp(executable_format, AXON_FORMAT_HOST_SHARED_OBJECT) == 0) return;
  static std::once_flag once;
  std::call_once(once, [] { std::thread(park_team).detach(); });
}

bool cores_freed_for_compiled_code() { return team_size.load() > 1; }

}  // namespace axon
