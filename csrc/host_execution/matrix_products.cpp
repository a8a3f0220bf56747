#include "host_execution/matrix_products.h"

#include <ATen/Config.h>
#include <ATen/Context.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#if AT_MKLDNN_ENABLED()
// ATen's oneDNN matrix product (aten/src/ATen/native/mkldnn/Matmul.cpp),
// exported by libtorch_cpu; the wheel does not ship its header. It computes
// result = beta * result + alpha * mat1 @ mat2 for 2-D (and batched 3-D)
// operands, reading contiguous and transposed-contiguous ones in place, in
// float arithmetic unless the user asked for reduced-precision float32
// products (torch.backends.mkldnn.matmul.fp32_precision), as the CPU's own
// products then do.
namespace at::native {
void mkldnn_matmul(const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& result, float beta, float alpha);
}  // namespace at::native
#endif

namespace axon {
namespace {

// Below this many multiply-adds MKL wins: oneDNN's fixed cost per call is
// about 15 us here. Measured crossover on the stop-49 host: 64x256x256 and
// 128x256x256 even, 32x512x512 0.81, 128x256x128 1.09 (oneDNN / MKL time).
constexpr double kMinimumMultiplyAdds = double(int64_t{1} << 23);

// A product of one row stays MKL's: for it oneDNN 3.12 picks an AVX2 kernel
// that, when it adds to the result (addmm's bias), writes outside its
// buffers (heap corruption, e.g. nn.Linear(4096, 2048) on a batch of one).
// From two rows on it picks its AVX-512 kernels, 2-3x MKL's speed on a few
// rows against a transposed weight. Fewer than 16 columns stay MKL's too:
// oneDNN is slower there (1024x1024x8 1.08x, 1024x4096x2 1.35x MKL's time).
constexpr int64_t kMinimumRows = 2;
constexpr int64_t kMinimumColumns = 16;

// oneDNN keeps each product shape it has run in two caches (ideep's and its
// own primitive cache, 1,024 entries each), about 0.6 MB of host memory per
// shape here: 2,000 distinct shapes grew the process by 1 GB. So only the
// first kMaxShapes distinct products a process makes (sizes, layouts, with or
// without a bias) go to oneDNN, and later new ones take MKL: host memory
// stays bounded, and a shape's library is fixed at its first call. A
// training step needs far fewer (the GPT of bench/training.py: 15).
constexpr std::size_t kMaxShapes = 32;

struct ProductShape {
  int64_t m, k, n;
  bool mat1_transposed, mat2_transposed, accumulate;
  bool operator==(const ProductShape&) const = default;
};

std::mutex shapes_mutex;
std::vector<ProductShape> admitted_shapes;  // at most kMaxShapes: a linear search is enough

bool admit(const ProductShape& shape) {
  const std::lock_guard<std::mutex> lock(shapes_mutex);
  if (std::find(admitted_shapes.begin(), admitted_shapes.end(), shape) != admitted_shapes.end()) return true;
  if (admitted_shapes.size() >= kMaxShapes) return false;
  admitted_shapes.push_back(shape);
  return true;
}

std::atomic<bool> products_enabled{true};
std::atomic<int64_t> product_runs{0};

// mkldnn_matmul refuses float operands on hosts without AVX-512 BW/VL/DQ.
bool host_runs_onednn_float_products() {
#if AT_MKLDNN_ENABLED() && defined(__x86_64__)
  static const bool supported =
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return supported;
#else
  return false;
#endif
}

// Contiguous, or the transpose of a contiguous matrix: what oneDNN reads in
// place (mkldnn_matmul would copy any other layout first; MKL reads those
// as they are).
bool plain(const at::Tensor& t) { return t.stride(1) == 1 && t.stride(0) == t.size(1); }
bool transposed(const at::Tensor& t) { return t.stride(0) == 1 && t.stride(1) == t.size(0); }

}  // namespace

bool onednn_takes_product(const at::Tensor& mat1, const at::Tensor& mat2, bool accumulate) {
  if (!products_enabled.load(std::memory_order_relaxed) || !host_runs_onednn_float_products() ||
      !at::globalContext().userEnabledMkldnn()) {
    return false;
  }
  if (mat1.scalar_type() != at::kFloat || mat2.scalar_type() != at::kFloat || mat1.dim() != 2 || mat2.dim() != 2 ||
      mat1.size(1) != mat2.size(0)) {
    return false;
  }
  if (mat1.size(0) < kMinimumRows || mat2.size(1) < kMinimumColumns) return false;
  const double multiply_adds = double(mat1.size(0)) * double(mat1.size(1)) * double(mat2.size(1));
  if (multiply_adds < kMinimumMultiplyAdds || !(plain(mat1) || transposed(mat1)) ||
      !(plain(mat2) || transposed(mat2))) {
    return false;
  }
  return admit({mat1.size(0), mat1.size(1), mat2.size(1), !plain(mat1), !plain(mat2), accumulate});
}

void onednn_product(const at::Tensor& result, const at::Tensor& mat1, const at::Tensor& mat2, bool accumulate) {
#if AT_MKLDNN_ENABLED()
  at::native::mkldnn_matmul(mat1, mat2, result, accumulate ? 1.0f : 0.0f, 1.0f);
  product_runs.fetch_add(1, std::memory_order_relaxed);
#else
  TORCH_INTERNAL_ASSERT(false, "onednn_product without oneDNN");
#endif
}

TeamUse product_team_use(int64_t batch, int64_t m, int64_t k, int64_t n) {
  if (batch == 1 && k >= kSplitSumsFromElements) return TeamUse::kForResults;
  constexpr int64_t kTeamMinimumSide = 8;
  const bool for_work = m >= kTeamMinimumSide && n >= kTeamMinimumSide &&
                        double(batch) * double(m) * double(k) * double(n) >= kTeamMinimumMultiplyAdds;
  return for_work ? TeamUse::kForWork : TeamUse::kBySize;
}

void set_onednn_products_enabled(bool enabled) { products_enabled.store(enabled, std::memory_order_relaxed); }

int64_t onednn_product_runs() { return product_runs.load(std::memory_order_relaxed); }

void forget_onednn_product_shapes() {
  const std::lock_guard<std::mutex> lock(shapes_mutex);
  admitted_shapes.clear();
}

}  // namespace axon
