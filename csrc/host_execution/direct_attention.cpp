#include "host_execution/direct_attention.h"

#include <ATen/OpMathType.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros_like.h>

#include <array>
#include <cmath>
#include <utility>

#include "host_execution/attention_blocks.h"
#include "host_execution/direct_launch.h"
#include "host_execution/matrix_products.h"

namespace axon {
namespace {

using direct::DirectOperator;

// A float [batch, heads, rows, columns] axon operand whose columns are
// adjacent and whose rows do not overlap (what a GEMM's leading dimension
// needs).
bool block_operand(const at::Tensor& t) {
  return direct::direct_operand(t) && t.scalar_type() == at::kFloat && t.dim() == 4 && t.stride(3) == 1 &&
         t.stride(2) >= t.size(3);
}

// The worker's aliases as the block kernels' operands (read) and results
// (written); a log-sum-exp [B, H, L] is matrices of one column.
AttentionOperand operand_of(const at::Tensor& t) {
  return {t.const_data_ptr<float>(), t.stride(0), t.stride(1), t.stride(2)};
}

AttentionResult result_of(const at::Tensor& t) {
  return {t.mutable_data_ptr<float>(), t.stride(0), t.stride(1), t.stride(2)};
}

// No dropout and no explicit mask: the calls axon answers itself (the rest
// go to the CPU's kernels, which take masks and refuse dropout).
bool unmasked_without_dropout(double dropout_p, const std::optional<at::Tensor>& attn_mask) {
  return dropout_p == 0.0 && !(attn_mask.has_value() && attn_mask->defined());
}

// Key and value of one length, all three of one head size (the CPU refuses
// other value widths).
bool lengths_and_head_sizes_agree(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value) {
  return key.size(3) == query.size(3) && value.size(3) == query.size(3) && value.size(2) == key.size(2);
}

// The geometry of a call axon's block kernels take, or nothing: query
// [B, H, L, D], key and value [B, H, S, D] (the CPU refuses other value
// widths) on one axon device the host addresses, no dropout, no mask, and
// sizes the kernels fit.
std::optional<AttentionGeometry> block_geometry(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                                double dropout_p, bool is_causal,
                                                const std::optional<at::Tensor>& attn_mask,
                                                std::optional<double> scale) {
  if (!unmasked_without_dropout(dropout_p, attn_mask) || !attention_blocks_available()) return std::nullopt;
  if (!block_operand(query) || !block_operand(key) || !block_operand(value)) return std::nullopt;
  if (key.device() != query.device() || value.device() != query.device() || !direct::direct_device(query.device())) {
    return std::nullopt;
  }
  const int64_t batch = query.size(0), heads = query.size(1);
  if (key.size(0) != batch || value.size(0) != batch || key.size(1) != heads || value.size(1) != heads ||
      !lengths_and_head_sizes_agree(query, key, value)) {
    return std::nullopt;
  }
  // The CPU's scale: the given one, else 1/√D, worked out in double and used as float. A scale that is not
  // finite, and a causal call's scale of 0 or less (the CPU's kernel multiplies its masked -inf by the scale
  // and returns NaN there), stay the CPU's: the products here take the scale as their alpha.
  const double factor = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(3)));
  if (!std::isfinite(static_cast<float>(factor)) || (is_causal && !(factor > 0.0))) return std::nullopt;
  AttentionGeometry geometry{};
  geometry.batch = batch;
  geometry.heads = heads;
  geometry.query_length = query.size(2);
  geometry.key_length = key.size(2);
  geometry.head_dim = query.size(3);
  geometry.value_dim = value.size(3);
  geometry.causal = is_causal;
  geometry.scale = static_cast<float>(factor);
  if (!attention_blocks_fit(geometry, {query.stride(2), key.stride(2), value.stride(2)})) return std::nullopt;
  return geometry;
}

// A tensor of `like`'s sizes laid out as the CPU's flash backward lays out
// its gradients: [B, L, H, D] in memory, seen as [B, H, L, D].
at::Tensor heads_interleaved_like(const at::Tensor& like) {
  return at::empty({like.size(0), like.size(2), like.size(1), like.size(3)}, like.options()).transpose(1, 2);
}

// Three inputs the CPU's flash kernels mishandle, answered here before
// either kernel sees them.
//
// A head dimension whose elements are not adjacent (stride(3) != 1): the
// CPU's kernels read it as if they were, and return wrong values. Such an
// operand is made contiguous first (a copy on the stream).
at::Tensor columns_adjacent(const at::Tensor& t) {
  return t.defined() && t.dim() == 4 && t.stride(3) != 1 ? t.contiguous() : t;
}

// Batch sizes that differ between query, key and value, key and value
// head counts that differ, or query heads that are not a multiple of the
// key heads (the CPU's kernels take grouped heads, 4 query heads to 2 key
// heads, and nothing else): the CPU's kernels accept them and read out of
// bounds, or divide by zero. Raised at the call.
void check_batches_and_heads(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value) {
  if (query.dim() != 4 || key.dim() != 4 || value.dim() != 4) return;  // the CPU's kernel raises for these
  const int64_t query_heads = query.size(1), key_heads = key.size(1);
  const bool grouped = key_heads == 0 ? query_heads == 0 : query_heads % key_heads == 0;
  TORCH_CHECK(key.size(0) == query.size(0) && value.size(0) == query.size(0) && value.size(1) == key_heads && grouped,
              "scaled_dot_product_attention_flash_attention: query, key and value must have the same batch size, "
              "key and value the same number of heads, and the query a multiple of it; got query ",
              query.sizes(), ", key ", key.sizes(), " and value ", value.sizes());
}

// No heads, no query rows or no keys: the CPU's kernels divide by zero
// (SIGFPE). Every query row then sees no key, which the CPU's kernels answer
// as they answer a fully masked row: zeros, and a log-sum-exp of 0; the
// gradients are zeros. Calls the CPU refuses for other reasons (dropout, a
// mask, another head size for the value) still go to it.
bool no_work(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, double dropout_p,
             const std::optional<at::Tensor>& attn_mask) {
  const auto floating = [&](const at::Tensor& t) {
    return direct::direct_operand(t) && at::isFloatingType(t.scalar_type()) && t.dim() == 4 &&
           t.scalar_type() == query.scalar_type() && t.device() == query.device();
  };
  return floating(query) && floating(key) && floating(value) && unmasked_without_dropout(dropout_p, attn_mask) &&
         lengths_and_head_sizes_agree(query, key, value) &&
         (query.size(1) == 0 || query.size(2) == 0 || key.size(2) == 0);
}

// A log-sum-exp for `query` as the CPU's forward lays it out: [B, L, H] in
// memory, seen as [B, H, L], of the CPU's accumulation type.
at::Tensor log_sum_exp_like(const at::Tensor& query) {
  return at::empty({query.size(0), query.size(2), query.size(1)},
                   query.options().dtype(at::toOpMathType(query.scalar_type())))
      .transpose(1, 2);
}

// Whether an attention call runs with the worker's team below
// kSingleThreadBelowBytes: its work grows with the square of the sequence, its
// bytes linearly. A causal 1x4x128x64 forward (4.2M multiply-adds, 0.5 MiB) took
// 165 us on one thread against the CPU's 106-113 on two (docs/benchmarks.md,
// stop 57). The bound is the matrix products'.
bool attention_wants_team(const AttentionGeometry& g) {
  double multiply_adds = double(g.batch) * double(g.heads) * double(g.query_length) * double(g.key_length) *
                         double(g.head_dim + g.value_dim);
  if (g.causal) multiply_adds /= 2;
  return multiply_adds >= kTeamMinimumMultiplyAdds;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> direct_flash_attention(const at::Tensor& query_given, const at::Tensor& key_given,
                                                          const at::Tensor& value_given, double dropout_p,
                                                          bool is_causal, const std::optional<at::Tensor>& attn_mask,
                                                          std::optional<double> scale) {
  static const DirectOperator op("_scaled_dot_product_flash_attention_for_cpu");
  check_batches_and_heads(query_given, key_given, value_given);
  const at::Tensor query = columns_adjacent(query_given), key = columns_adjacent(key_given),
                   value = columns_adjacent(value_given);
  if (no_work(query, key, value, dropout_p, attn_mask)) {
    const c10::DeviceGuard guard(query.device());
    return {at::zeros_like(query), log_sum_exp_like(query).zero_()};
  }
  if (const auto geometry = block_geometry(query, key, value, dropout_p, is_causal, attn_mask, scale)) {
    const c10::DeviceGuard guard(query.device());
    // The CPU's layouts: the output is empty_like(query).
    at::Tensor output = at::empty_like(query);
    at::Tensor lse = log_sum_exp_like(query);
    direct::queue_over_aliases<5>(
        op.kernel_name(), query.device(), {&query, &key, &value, &output, &lse},
        [g = *geometry](std::array<at::Tensor, 5>& t) {
          attention_forward_blocks(g, operand_of(t[0]), operand_of(t[1]), operand_of(t[2]), result_of(t[3]),
                                   result_of(t[4]));
        },
        attention_wants_team(*geometry) ? TeamUse::kForWork : TeamUse::kBySize);
    return {std::move(output), std::move(lse)};
  }
  torch::jit::Stack results = op.generic_results(query, key, value, dropout_p, is_causal, attn_mask, scale);
  return {std::move(results[0]).toTensor(), std::move(results[1]).toTensor()};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_flash_attention_backward(
    const at::Tensor& grad_out_given, const at::Tensor& query_given, const at::Tensor& key_given,
    const at::Tensor& value_given, const at::Tensor& out_given, const at::Tensor& logsumexp, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& attn_mask, std::optional<double> scale) {
  static const DirectOperator op("_scaled_dot_product_flash_attention_for_cpu_backward");
  check_batches_and_heads(query_given, key_given, value_given);
  const at::Tensor query = columns_adjacent(query_given), key = columns_adjacent(key_given),
                   value = columns_adjacent(value_given), grad_out = columns_adjacent(grad_out_given),
                   out = columns_adjacent(out_given);
  if (grad_out.defined() && no_work(query, key, value, dropout_p, attn_mask)) {
    const c10::DeviceGuard guard(query.device());
    return {heads_interleaved_like(query).zero_(), heads_interleaved_like(key).zero_(),
            heads_interleaved_like(value).zero_()};
  }
  const auto geometry = block_geometry(query, key, value, dropout_p, is_causal, attn_mask, scale);
  // The gradient and the forward's output: [B, H, L, D] as the forward's; its log-sum-exp: float [B, H, L].
  const auto forward_shaped = [&](const at::Tensor& t) {
    return block_operand(t) && t.device() == query.device() && t.size(0) == query.size(0) &&
           t.size(1) == query.size(1) && t.size(2) == query.size(2) && t.size(3) == value.size(3);
  };
  if (geometry && forward_shaped(grad_out) && forward_shaped(out) &&
      attention_blocks_fit(*geometry, {grad_out.stride(2), out.stride(2)}) && direct::direct_operand(logsumexp) &&
      logsumexp.scalar_type() == at::kFloat && logsumexp.device() == query.device() &&
      logsumexp.sizes().equals({query.size(0), query.size(1), query.size(2)})) {
    const c10::DeviceGuard guard(query.device());
    at::Tensor grad_query = heads_interleaved_like(query);
    at::Tensor grad_key = heads_interleaved_like(key);
    at::Tensor grad_value = heads_interleaved_like(value);
    direct::queue_over_aliases<9>(
        op.kernel_name(), query.device(),
        {&grad_out, &query, &key, &value, &out, &logsumexp, &grad_query, &grad_key, &grad_value},
        [g = *geometry](std::array<at::Tensor, 9>& t) {
          attention_backward_blocks(g, operand_of(t[0]), operand_of(t[1]), operand_of(t[2]), operand_of(t[3]),
                                    operand_of(t[4]), operand_of(t[5]), result_of(t[6]), result_of(t[7]),
                                    result_of(t[8]));
        },
        attention_wants_team(*geometry) ? TeamUse::kForWork : TeamUse::kBySize);
    return {std::move(grad_query), std::move(grad_key), std::move(grad_value)};
  }
  torch::jit::Stack results =
      op.generic_results(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask, scale);
  return {std::move(results[0]).toTensor(), std::move(results[1]).toTensor(), std::move(results[2]).toTensor()};
}

}  // namespace axon
