// The direct kernels of the CPU's flash attention operators (direct_kernels.h),
// which scaled_dot_product_attention calls on axon: float calls without
// dropout or an explicit mask, on sequences of at most
// kAttentionBlocksMaxKeyLength keys, run axon's block kernels
// (attention_blocks.h); every other call goes to the generic kernel, which
// runs the CPU's flash kernels and raises their errors at the call. Results
// have the CPU's layouts. Three inputs the CPU's kernels mishandle are
// answered before either runs (direct_attention.cpp): a head dimension with
// gaps, batch or head counts that do not match, and calls with no heads,
// rows or keys.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace axon {

std::tuple<at::Tensor, at::Tensor> direct_flash_attention(const at::Tensor& query, const at::Tensor& key,
                                                          const at::Tensor& value, double dropout_p, bool is_causal,
                                                          const std::optional<at::Tensor>& attn_mask,
                                                          std::optional<double> scale);

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_flash_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& out, const at::Tensor& logsumexp, double dropout_p, bool is_causal,
    const std::optional<at::Tensor>& attn_mask, std::optional<double> scale);

}  // namespace axon
