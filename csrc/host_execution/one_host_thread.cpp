#include "host_execution/one_host_thread.h"

#include <ATen/Parallel.h>

// OpenMP's per-thread team size (omp.h is not among PyTorch's headers;
// libgomp is loaded with it).
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int threads);
// MKL's per-thread count (0: follow the global one), by its C name (MKL's
// header maps mkl_set_num_threads_local to it; the lowercase symbol is the
// Fortran one, which takes a pointer). Weak: a PyTorch built without MKL
// lacks it. torch.set_num_threads sets MKL's global count, which MKL then
// prefers to OpenMP's team size.
extern "C" int MKL_Set_Num_Threads_Local(int threads) __attribute__((weak));

namespace axon {

OneHostThreadScope::OneHostThreadScope() {
  // ATen sets a thread's team size on its first parallel call; done here
  // first, that setting is the one restored below rather than overriding ours.
  at::get_num_threads();
  saved_threads_ = omp_get_max_threads();
  omp_set_num_threads(1);
  if (MKL_Set_Num_Threads_Local != nullptr) saved_mkl_threads_ = MKL_Set_Num_Threads_Local(1);
}

OneHostThreadScope::~OneHostThreadScope() {
  if (MKL_Set_Num_Threads_Local != nullptr) MKL_Set_Num_Threads_Local(saved_mkl_threads_);
  omp_set_num_threads(saved_threads_);
}

}  // namespace axon
