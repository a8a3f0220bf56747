// Scaled dot-product attention over blocks of query rows, for short
// sequences: axon's kernels behind the CPU's flash attention operators.
//
// At the lengths small models train on (a GPT step's 128 tokens, 64 per
// head) attention is the largest part of a training step after the matrix
// products. Here each block of 32 query rows takes all the keys it sees at
// once: one matrix product (MKL, one thread per block) for the scores, a
// softmax over rows held in cache whose normalization is applied once to
// the output, one product for the output. Under a causal mask a block stops
// at its last row's keys. On the 2-core host the forward takes about 0.85
// and the backward 0.75 of the CPU flash kernels' time at those sizes
// (docs/benchmarks.md). The backward recomputes each block's
// probabilities from the forward's log-sum-exp, as the flash backward does,
// and accumulates the key and value gradients block by block. The products
// are MKL's single-precision GEMM and the exponentials MKL's vector exp,
// both exported by libtorch_cpu; a build without them has no such kernels
// (attention_blocks_available), and calls go to the CPU's kernels.
//
// The values are the softmax attention's to within float rounding, not the
// flash kernel's bits: the products, sums and exponentials are other code,
// summing in another order.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace axon {

// Float matrices of shape [batch, heads, rows, columns] whose columns are
// adjacent in memory (stride 1); the other strides in elements. `Element`
// is const float for what the kernels read, float for what they write. A
// log-sum-exp, [batch, heads, query rows], is matrices of one column.
template <class Element>
struct AttentionMatrices {
  Element* data;
  int64_t batch_stride;
  int64_t head_stride;
  int64_t row_stride;
};
using AttentionOperand = AttentionMatrices<const float>;
using AttentionResult = AttentionMatrices<float>;

struct AttentionGeometry {
  int64_t batch;
  int64_t heads;
  int64_t query_length;
  int64_t key_length;
  int64_t head_dim;   // of queries and keys
  int64_t value_dim;  // of values and the output
  bool causal;        // query row i sees keys 0..i (the mask's top-left alignment, as the CPU's)
  float scale;
};

// The longest key sequence these kernels take: each thread holds a block's
// scores for every key (32 rows × 1024 floats, 128 KiB, twice in the
// backward). Longer sequences go to the flash kernel, whose key blocks suit
// them.
constexpr int64_t kAttentionBlocksMaxKeyLength = 1024;

// Whether MKL's GEMM and vector exp are in this process and the kernels are
// enabled (they are unless a test turned them off).
bool attention_blocks_available();

// False: the flash attention operators run the CPU's kernels on axon too,
// for comparisons (tests, benchmarks).
void set_attention_blocks_enabled(bool enabled);

// Whether the geometry's sizes and the operands' row strides fit these
// kernels (keys within the limit, leading dimensions a 32-bit GEMM takes).
bool attention_blocks_fit(const AttentionGeometry& geometry, std::initializer_list<int64_t> row_strides);

// output = softmax(scale · q kᵀ, masked) v; row_lse = the log-sum-exp of each
// row's scaled, masked scores.
void attention_forward_blocks(const AttentionGeometry& geometry, const AttentionOperand& query,
                              const AttentionOperand& key, const AttentionOperand& value, const AttentionResult& output,
                              const AttentionResult& row_lse);

// The gradients of the forward above, given its output and log-sum-exp.
void attention_backward_blocks(const AttentionGeometry& geometry, const AttentionOperand& grad_output,
                               const AttentionOperand& query, const AttentionOperand& key,
                               const AttentionOperand& value, const AttentionOperand& output,
                               const AttentionOperand& row_lse, const AttentionResult& grad_query,
                               const AttentionResult& grad_key, const AttentionResult& grad_value);

}  // namespace axon
