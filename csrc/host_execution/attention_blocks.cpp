#include "host_execution/attention_blocks.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "host_execution/mkl_vector_math.h"
#include "host_execution/one_host_thread.h"
#include "host_execution/per_instruction_set.h"

// MKL's Fortran-interface single-precision GEMM (32-bit integers), exported
// by libtorch_cpu where PyTorch is built with MKL, as its vector exp is
// (mkl_vector_math.h). Declared weak, so that a build without them leaves
// them null and the kernels unused.
extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c, const int* ldc)
    __attribute__((weak));
}

namespace axon {
namespace {

// Query rows per block: large enough that the products run near the host's
// GEMM speed, small enough that a causal block skips most masked keys.
constexpr int64_t kQueryBlock = 32;

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

// C[m×n] = alpha · op(A)[m×k] · op(B)[k×n] + beta · C, all row-major with
// the given row strides; op transposes where asked. Fortran GEMM is
// column-major: a row-major matrix is its transpose there, so this asks for
// Cᵀ = op(B)ᵀ op(A)ᵀ.
void gemm_rows(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const char trans_first = transpose_b ? 'T' : 'N';
  const char trans_second = transpose_a ? 'T' : 'N';
  const int rows = static_cast<int>(n), columns = static_cast<int>(m), inner = static_cast<int>(k);
  const int first_ld = static_cast<int>(ldb), second_ld = static_cast<int>(lda), result_ld = static_cast<int>(ldc);
  sgemm_(&trans_first, &trans_second, &rows, &columns, &inner, &alpha, b, &first_ld, a, &second_ld, &beta, c,
         &result_ld);
}

// The keys query row `row` sees among the first `keys`.
int64_t visible_keys(const AttentionGeometry& g, int64_t row, int64_t keys) {
  return g.causal ? std::min(keys, row + 1) : keys;
}

// The keys a block of query rows ending before `row_end` needs.
int64_t block_keys(const AttentionGeometry& g, int64_t row_end) {
  return g.causal ? std::min(g.key_length, row_end) : g.key_length;
}

// The largest of a row's first `n` scores, and their sum, in sixteen lanes
// (so that the compiler vectorizes them).
constexpr int kLanes = 16;

AXON_PER_INSTRUCTION_SET
float row_max(const float* row, int64_t n) {
  float lanes[kLanes];
  std::fill_n(lanes, kLanes, kMinusInfinity);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], row[j + l]);
  }
  for (; j < n; ++j) lanes[0] = std::max(lanes[0], row[j]);
  return *std::max_element(lanes, lanes + kLanes);
}

AXON_PER_INSTRUCTION_SET
float row_sum(const float* row, int64_t n) {
  float lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += row[j + l];
  }
  for (; j < n; ++j) lanes[0] += row[j];
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

AXON_PER_INSTRUCTION_SET
float row_dot(const float* a, const float* b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += a[j + l] * b[j + l];
  }
  for (; j < n; ++j) lanes[0] += a[j] * b[j];
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

AXON_PER_INSTRUCTION_SET
void subtract(float* row, int64_t n, float value) {
  for (int64_t j = 0; j < n; ++j) row[j] -= value;
}

AXON_PER_INSTRUCTION_SET
void scale_row(float* row, int64_t n, float factor) {
  for (int64_t j = 0; j < n; ++j) row[j] *= factor;
}

// exp(row - shift) over a row's first `visible` entries, zeros after them
// (the masked keys) up to `keys`.
void exponentials(float* row, int64_t visible, int64_t keys, float shift) {
  subtract(row, visible, shift);
  vmsExp(static_cast<int>(visible), row, row, kMklVectorMathMode);
  std::fill(row + visible, row + keys, 0.0f);
}

// dS = P ∘ (dP − dot) · scale, written over dP.
AXON_PER_INSTRUCTION_SET
void score_gradient_row(float* grad_probabilities, const float* probabilities, int64_t keys, float dot, float scale) {
  for (int64_t j = 0; j < keys; ++j) {
    grad_probabilities[j] = probabilities[j] * (grad_probabilities[j] - dot) * scale;
  }
}

template <class Element>
Element* row_pointer(const AttentionMatrices<Element>& t, int64_t batch, int64_t head, int64_t row) {
  return t.data + batch * t.batch_stride + head * t.head_stride + row * t.row_stride;
}

std::atomic<bool> blocks_enabled{true};

bool fits_int(int64_t value) { return value >= 0 && value <= std::numeric_limits<int>::max(); }

}  // namespace

bool attention_blocks_available() {
  return sgemm_ != nullptr && vmsExp != nullptr && blocks_enabled.load(std::memory_order_relaxed);
}

void set_attention_blocks_enabled(bool enabled) { blocks_enabled.store(enabled, std::memory_order_relaxed); }

bool attention_blocks_fit(const AttentionGeometry& g, std::initializer_list<int64_t> row_strides) {
  if (g.batch < 1 || g.heads < 1 || g.query_length < 1 || g.key_length < 1 || g.head_dim < 1 || g.value_dim < 1) {
    return false;
  }
  if (g.key_length > kAttentionBlocksMaxKeyLength || !fits_int(g.head_dim) || !fits_int(g.value_dim)) return false;
  for (const int64_t stride : row_strides) {
    if (!fits_int(stride)) return false;
  }
  return true;
}

void attention_forward_blocks(const AttentionGeometry& g, const AttentionOperand& query, const AttentionOperand& key,
                              const AttentionOperand& value, const AttentionResult& output,
                              const AttentionResult& row_lse) {
  const int64_t blocks = (g.query_length + kQueryBlock - 1) / kQueryBlock;
  const int64_t units = g.batch * g.heads * blocks;
  at::parallel_for(0, units, 1, [&](int64_t begin, int64_t end) {
    const OneHostThreadScope one_thread_per_product;
    std::vector<float> scores(static_cast<std::size_t>(kQueryBlock * g.key_length));
    int64_t visible[kQueryBlock];
    float inverse_sum[kQueryBlock];
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t block = unit % blocks, head = (unit / blocks) % g.heads, batch = unit / (blocks * g.heads);
      const int64_t first = block * kQueryBlock, rows = std::min(kQueryBlock, g.query_length - first);
      const int64_t keys = block_keys(g, first + rows);
      for (int64_t i = 0; i < rows; ++i) visible[i] = visible_keys(g, first + i, keys);
      gemm_rows(false, true, rows, keys, g.head_dim, g.scale, row_pointer(query, batch, head, first), query.row_stride,
                row_pointer(key, batch, head, 0), key.row_stride, 0.0f, scores.data(), keys);
      float* lse = row_pointer(row_lse, batch, head, first);
      for (int64_t i = 0; i < rows; ++i) {
        float* row = scores.data() + i * keys;
        const float largest = row_max(row, visible[i]);
        if (largest == kMinusInfinity) {
          // Every score -inf or NaN (only from infinite inputs): the CPU's flash kernel treats the row as
          // fully masked, an output of zeros and a log-sum-exp of 0; so does this one.
          std::fill(row, row + keys, 0.0f);
          lse[i * row_lse.row_stride] = 0.0f;
          inverse_sum[i] = 1.0f;
          continue;
        }
        exponentials(row, visible[i], keys, largest);
        const float sum = row_sum(row, visible[i]);
        lse[i * row_lse.row_stride] = largest + std::log(sum);
        inverse_sum[i] = 1.0f / sum;
      }
      float* out = row_pointer(output, batch, head, first);
      gemm_rows(false, false, rows, g.value_dim, keys, 1.0f, scores.data(), keys, row_pointer(value, batch, head, 0),
                value.row_stride, 0.0f, out, output.row_stride);
      for (int64_t i = 0; i < rows; ++i) scale_row(out + i * output.row_stride, g.value_dim, inverse_sum[i]);
    }
  });
}

void attention_backward_blocks(const AttentionGeometry& g, const AttentionOperand& grad_output,
                               const AttentionOperand& query, const AttentionOperand& key,
                               const AttentionOperand& value, const AttentionOperand& output,
                               const AttentionOperand& row_lse, const AttentionResult& grad_query,
                               const AttentionResult& grad_key, const AttentionResult& grad_value) {
  // The key and value gradients of a head sum over all its query blocks, so a
  // head is one thread's work.
  at::parallel_for(0, g.batch * g.heads, 1, [&](int64_t begin, int64_t end) {
    const OneHostThreadScope one_thread_per_product;
    std::vector<float> probabilities(static_cast<std::size_t>(kQueryBlock * g.key_length));
    std::vector<float> grad_scores(probabilities.size());
    int64_t visible[kQueryBlock];
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t head = unit % g.heads, batch = unit / g.heads;
      for (int64_t row = 0; row < g.key_length; ++row) {
        std::fill_n(row_pointer(grad_key, batch, head, row), g.head_dim, 0.0f);
        std::fill_n(row_pointer(grad_value, batch, head, row), g.value_dim, 0.0f);
      }
      for (int64_t first = 0; first < g.query_length; first += kQueryBlock) {
        const int64_t rows = std::min(kQueryBlock, g.query_length - first);
        const int64_t keys = block_keys(g, first + rows);
        for (int64_t i = 0; i < rows; ++i) visible[i] = visible_keys(g, first + i, keys);
        const float* q = row_pointer(query, batch, head, first);
        const float* k = row_pointer(key, batch, head, 0);
        const float* v = row_pointer(value, batch, head, 0);
        const float* grad_out = row_pointer(grad_output, batch, head, first);
        float* p = probabilities.data();
        float* ds = grad_scores.data();
        gemm_rows(false, true, rows, keys, g.head_dim, g.scale, q, query.row_stride, k, key.row_stride, 0.0f, p, keys);
        const float* lse = row_pointer(row_lse, batch, head, first);
        for (int64_t i = 0; i < rows; ++i) exponentials(p + i * keys, visible[i], keys, lse[i * row_lse.row_stride]);
        // dV += Pᵀ dO; dP = dO Vᵀ.
        gemm_rows(true, false, keys, g.value_dim, rows, 1.0f, p, keys, grad_out, grad_output.row_stride, 1.0f,
                  row_pointer(grad_value, batch, head, 0), grad_value.row_stride);
        gemm_rows(false, true, rows, keys, g.value_dim, 1.0f, grad_out, grad_output.row_stride, v, value.row_stride,
                  0.0f, ds, keys);
        const float* out = row_pointer(output, batch, head, first);
        for (int64_t i = 0; i < rows; ++i) {
          const float dot = row_dot(grad_out + i * grad_output.row_stride, out + i * output.row_stride, g.value_dim);
          score_gradient_row(ds + i * keys, p + i * keys, keys, dot, g.scale);
        }
        // dQ = dS K; dK += dSᵀ Q.
        gemm_rows(false, false, rows, g.head_dim, keys, 1.0f, ds, keys, k, key.row_stride, 0.0f,
                  row_pointer(grad_query, batch, head, first), grad_query.row_stride);
        gemm_rows(true, false, keys, g.head_dim, rows, 1.0f, ds, keys, q, query.row_stride, 1.0f,
                  row_pointer(grad_key, batch, head, 0), grad_key.row_stride);
      }
    }
  });
}

}  // namespace axon
