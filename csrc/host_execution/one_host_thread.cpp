#include "host_execution/one_host_thread.h"

#include <ATen/Parallel.h>

// OpenMP's per-thread team size (omp.h is not among PyTorch's headers;
// libgomp is loaded with it).
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int threads);

namespace axon {

OneHostThreadScope::OneHostThreadScope() {
  // ATen sets a thread's team size on its first parallel call; done here
  // first, that setting is the one restored below rather than overriding ours.
  at::get_num_threads();
  saved_threads_ = omp_get_max_threads();
  omp_set_num_threads(1);
}

OneHostThreadScope::~OneHostThreadScope() { omp_set_num_threads(saved_threads_); }

}  // namespace axon
