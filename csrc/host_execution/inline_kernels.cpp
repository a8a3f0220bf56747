#include "host_execution/inline_kernels.h"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "axon/stream.h"
#include "core/copy_on_write.h"
#include "core/device_allocator.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/element_loop_proofs.h"
#include "host_execution/small_matrix_products.h"
#include "host_execution/stream_launch.h"

namespace axon {
namespace {

std::atomic<int64_t> runs{0};

// What the calling thread computes: optionally a copy of `copy_bytes` from
// `copy_from` into operands[0], then one of the bodies below.
struct InlineWork {
  enum class Body { kElementLoop, kRelu, kFill, kMatrixProduct } body = Body::kElementLoop;
  ElementLoop loop = nullptr;
  char* operands[3] = {nullptr, nullptr, nullptr};
  const char* copy_from = nullptr;
  std::size_t copy_bytes = 0;
  int64_t n = 0;
  double scalar = 0;
  double alpha = 1;
  bool is_double = false;
  unsigned char fill_element[8] = {};  // one element of the fill value, as stored
  std::size_t element_size = 0;
  int64_t rows = 0, terms = 0, columns = 0;                                // a matrix product's m, k and n
  ProductSummation summation = ProductSummation::kFusedAfterFirstProduct;  // and how it sums

  // The relu of the CPU's clamp_min(x, 0): its vector path is a max with 0
  // first, which returns x for a NaN and for either zero, and 0 below it.
  template <class T>
  void relu() const {
    const auto* in = reinterpret_cast<const T*>(operands[1]);
    auto* out = reinterpret_cast<T*>(operands[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] < T(0) ? T(0) : in[i];
  }

  void fill() const {
    char* out = operands[0];
    const auto bytes = static_cast<std::size_t>(n) * element_size;
    if (std::all_of(fill_element, fill_element + element_size, [](unsigned char b) { return b == 0; })) {
      std::memset(out, 0, bytes);
      return;
    }
    for (std::size_t at = 0; at < bytes; at += element_size) std::memcpy(out + at, fill_element, element_size);
  }

  static axon_status run(void* user_data, char* /*message*/) {
    const auto& work = *static_cast<const InlineWork*>(user_data);
    if (work.copy_from != nullptr) std::memcpy(work.operands[0], work.copy_from, work.copy_bytes);
    switch (work.body) {
      case Body::kElementLoop:
        work.loop(work.operands, work.n, work.scalar, work.alpha);
        break;
      case Body::kRelu:
        if (work.is_double) {
          work.relu<double>();
        } else {
          work.relu<float>();
        }
        break;
      case Body::kFill:
        work.fill();
        break;
      case Body::kMatrixProduct:
        small_matrix_product(work.summation, reinterpret_cast<const float*>(work.operands[1]),
                             reinterpret_cast<const float*>(work.operands[2]),
                             reinterpret_cast<float*>(work.operands[0]), work.rows, work.terms, work.columns);
        break;
    }
    return AXON_SUCCESS;
  }
};

// The host address of `tensor`'s first element (memory the host can
// address: the direct kernels' callers checked).
char* host_address(const at::Tensor& tensor) {
  const c10::Storage& storage = tensor.storage();
  materialize_for_write(storage);  // the direct kernels decline shared storages they check; this covers the rest
  auto* base = static_cast<char*>(
      host_bytes_for_kernel(const_cast<void*>(storage.data()), device_allocator_host_view(storage.data_ptr())));
  return base + tensor.storage_offset() * static_cast<int64_t>(tensor.itemsize());
}

// Whether the calling thread flushes subnormals (torch.set_flush_denormal
// sets that thread's mode only). The worker does not, so a call computed here
// would then give other bits than the same call queued.
bool calling_thread_flushes_subnormals() {
#if defined(__x86_64__) || defined(__i386__)
  constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  return (_mm_getcsr() & (kFlushToZero | kDenormalsAreZero)) != 0;
#else
  return false;
#endif
}

// Whether `tensor` may be an inline operand: small, and computed here as the
// worker would compute it.
bool inline_operand(const at::Tensor& tensor) {
  const int64_t n = tensor.numel();
  return n > 0 && n * static_cast<int64_t>(tensor.itemsize()) <= kInlineOperandBytesMax &&
         !calling_thread_flushes_subnormals();
}

// Runs `work` on the calling thread if the current stream of `tensor`'s
// device is idle.
bool run_if_idle(const at::Tensor& tensor, InlineWork& work) {
  const axon_host_function task{&InlineWork::run, nullptr, &work};
  if (axon_stream_run_host_function_if_idle(current_stream_handle(tensor.device().index()), task) != AXON_SUCCESS) {
    return false;  // busy, recording, or not offered: the caller queues it (and meets any error there)
  }
  runs.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// A number as the loop takes it; for sub, the CPU computes x - s as
// x + (-1)·s after converting s, so the conversion comes first (an integer 0
// becomes -0, which matters for x = -0) and the product is exact except for a
// NaN: x86's multiplication returns a NaN operand unchanged, sign included.
double loop_number(InlineBinary op, const c10::Scalar& number, at::ScalarType dtype) {
  const double value = element_loop_number(number, dtype);
  return op == InlineBinary::kSub && !std::isnan(value) ? -value : value;
}

ElementLoop loop_for(ElementOp op, at::ScalarType dtype) {
  return (dtype == at::kFloat || dtype == at::kDouble) ? proven_element_loop(op, dtype) : nullptr;
}

// Sets `work`'s loop and number for operands[0] = operands[0] `op` number
// (sub as an add of the negated number); false where no loop is proven.
bool with_number(InlineWork& work, InlineBinary op, const c10::Scalar& number, at::ScalarType dtype) {
  const ElementOp element_op = op == InlineBinary::kMul   ? ElementOp::kMulScalar
                               : op == InlineBinary::kDiv ? ElementOp::kDivScalar
                                                          : ElementOp::kAddScalar;
  work.loop = loop_for(element_op, dtype);
  work.scalar = loop_number(op, number, dtype);
  return work.loop != nullptr;
}

}  // namespace

bool inline_binary(InlineBinary op, const at::Tensor& out, const at::Tensor& self, const at::Tensor* other,
                   const c10::Scalar& number, const c10::Scalar& alpha) {
  if (!inline_operand(self)) return false;
  const at::ScalarType dtype = self.scalar_type();
  InlineWork work;
  work.n = self.numel();
  if (other != nullptr) {
    // add and sub in one pass (y + a*z into the result); mul and div on a copy of self.
    if (op == InlineBinary::kAdd || op == InlineBinary::kSub) {
      work.loop = loop_for(ElementOp::kAddListOut, dtype);
      if (work.loop == nullptr) return false;
      work.alpha =
          element_loop_alpha(op == InlineBinary::kSub ? ElementOp::kSubList : ElementOp::kAddList, alpha, dtype);
      work.operands[0] = host_address(out);
      work.operands[1] = host_address(self);
      work.operands[2] = host_address(*other);
      return run_if_idle(out, work);
    }
    work.loop = loop_for(op == InlineBinary::kMul ? ElementOp::kMulList : ElementOp::kDivList, dtype);
    if (work.loop == nullptr) return false;
    work.operands[1] = host_address(*other);
  } else {
    if ((op == InlineBinary::kAdd || op == InlineBinary::kSub) &&
        !(alpha.isIntegral(false) && alpha.to<int64_t>() == 1)) {
      return false;
    }
    if (!with_number(work, op, number, dtype)) return false;
  }
  work.operands[0] = host_address(out);
  work.copy_from = host_address(self);
  work.copy_bytes = static_cast<std::size_t>(work.n) * self.itemsize();
  return run_if_idle(out, work);
}

bool inline_binary_in_place(InlineBinary op, const at::Tensor& self, const c10::Scalar& number) {
  if (!inline_operand(self) || !self.is_contiguous()) return false;
  InlineWork work;
  if (!with_number(work, op, number, self.scalar_type())) return false;
  work.n = self.numel();
  work.operands[0] = host_address(self);
  return run_if_idle(self, work);
}

bool inline_relu(const at::Tensor& out, const at::Tensor& self) {
  const at::ScalarType dtype = self.scalar_type();
  if (!inline_operand(self) || (dtype != at::kFloat && dtype != at::kDouble)) return false;
  InlineWork work;
  work.body = InlineWork::Body::kRelu;
  work.n = self.numel();
  work.is_double = dtype == at::kDouble;
  work.operands[0] = host_address(out);
  work.operands[1] = host_address(self);
  return run_if_idle(out, work);
}

bool inline_fill(const at::Tensor& self, const c10::Scalar& value) {
  if (!inline_operand(self) || !self.is_contiguous() || self.itemsize() > sizeof(InlineWork::fill_element))
    return false;
  InlineWork work;
  work.body = InlineWork::Body::kFill;
  work.n = self.numel();
  work.element_size = self.itemsize();
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, self.scalar_type(), "fill_", [&] {
    const scalar_t converted = value.to<scalar_t>();
    std::memcpy(work.fill_element, &converted, sizeof(scalar_t));
  });
  work.operands[0] = host_address(self);
  return run_if_idle(self, work);
}

bool inline_mm(const at::Tensor& out, const at::Tensor& self, const at::Tensor& mat2) {
  if (self.scalar_type() != at::kFloat || mat2.scalar_type() != at::kFloat) return false;
  const int64_t m = self.size(0), k = self.size(1), n = mat2.size(1);
  if (!inline_operand(self) || !inline_operand(mat2) ||
      m * n * static_cast<int64_t>(sizeof(float)) > kInlineOperandBytesMax) {
    return false;
  }
  // Row-major with exactly these strides: the layout the proof's CPU mm had.
  if (self.stride(0) != k || self.stride(1) != 1 || mat2.stride(0) != n || mat2.stride(1) != 1) return false;
  // Proven on one thread, as the queued kernel of this size runs: a product
  // the worker would split over two threads may round otherwise.
  static_assert(std::size_t{3 * kInlineOperandBytesMax} < kSingleThreadBelowBytes,
                "inline products run single-threaded");
  const std::optional<ProductSummation> summation = proven_product_summation(m, k, n);
  if (!summation) return false;
  InlineWork work;
  work.summation = *summation;
  work.body = InlineWork::Body::kMatrixProduct;
  work.rows = m;
  work.terms = k;
  work.columns = n;
  work.operands[0] = host_address(out);
  work.operands[1] = host_address(self);
  work.operands[2] = host_address(mat2);
  return run_if_idle(out, work);
}

int64_t inline_kernel_runs() { return runs.load(std::memory_order_relaxed); }

}  // namespace axon
