// The cells are written as axon operators (each a queued device kernel), so
// they run asynchronously on the current stream like everything else.
#include "ops/recurrent_cells.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>

#include <vector>

namespace axon {
namespace {

at::Tensor with_bias(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  return bias.has_value() && bias->defined() ? gates + *bias : gates;
}

void check_gates(const at::Tensor& input_gates, const at::Tensor& hidden_gates, int64_t gate_count,
                 const at::Tensor& state, const char* name) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(), name,
              ": expected 2-D input_gates and hidden_gates of the same shape, got ", input_gates.sizes(), " and ",
              hidden_gates.sizes());
  TORCH_CHECK(input_gates.size(1) == gate_count * state.size(-1) && state.size(0) == input_gates.size(0), name,
              ": gates of shape ", input_gates.sizes(), " do not match a state of shape ", state.sizes());
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(const at::Tensor& input_gates,
                                                               const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                               const std::optional<at::Tensor>& input_bias,
                                                               const std::optional<at::Tensor>& hidden_bias) {
  check_gates(input_gates, hidden_gates, 4, cx, "_thnn_fused_lstm_cell");
  const auto gates = with_bias(with_bias(input_gates, input_bias), hidden_bias) + hidden_gates;
  auto chunks = gates.chunk(4, 1);
  const auto input = at::sigmoid(chunks[0]);
  const auto forget = at::sigmoid(chunks[1]);
  const auto cell = at::tanh(chunks[2]);
  const auto output = at::sigmoid(chunks[3]);
  auto cy = forget * cx + input * cell;
  auto hy = output * at::tanh(cy);
  // Workspace: the activated gates, as CUDA stores them.
  auto workspace = at::cat(std::vector<at::Tensor>{input, forget, cell, output}, 1);
  return std::make_tuple(hy, cy, workspace);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(const std::optional<at::Tensor>& grad_hy,
                                                                        const std::optional<at::Tensor>& grad_cy,
                                                                        const at::Tensor& cx, const at::Tensor& cy,
                                                                        const at::Tensor& workspace, bool has_bias) {
  const bool has_grad_hy = grad_hy.has_value() && grad_hy->defined();
  const bool has_grad_cy = grad_cy.has_value() && grad_cy->defined();
  if (!has_grad_hy && !has_grad_cy) {
    return std::make_tuple(at::Tensor(), at::Tensor(), at::Tensor());
  }
  auto chunks = workspace.chunk(4, 1);
  const auto& input = chunks[0];
  const auto& forget = chunks[1];
  const auto& cell = chunks[2];
  const auto& output = chunks[3];
  const auto tanh_cy = at::tanh(cy);
  const auto gh = has_grad_hy ? *grad_hy : at::zeros_like(cy);
  auto grad_cell_state =
      has_grad_cy ? *grad_cy + gh * output * (1 - tanh_cy * tanh_cy) : gh * output * (1 - tanh_cy * tanh_cy);
  const auto grad_output = gh * tanh_cy * output * (1 - output);
  const auto grad_input = grad_cell_state * cell * input * (1 - input);
  const auto grad_forget = grad_cell_state * cx * forget * (1 - forget);
  const auto grad_cell = grad_cell_state * input * (1 - cell * cell);
  auto grad_gates = at::cat(std::vector<at::Tensor>{grad_input, grad_forget, grad_cell, grad_output}, 1);
  auto grad_cx = grad_cell_state * forget;
  auto grad_bias = has_bias ? at::sum(grad_gates, {0}) : at::Tensor();
  return std::make_tuple(grad_gates, grad_cx, grad_bias);
}

std::tuple<at::Tensor, at::Tensor> fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                  const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                                  const std::optional<at::Tensor>& hidden_bias) {
  check_gates(input_gates, hidden_gates, 3, hx, "_thnn_fused_gru_cell");
  auto input_chunks = with_bias(input_gates, input_bias).chunk(3, 1);
  auto hidden_chunks = with_bias(hidden_gates, hidden_bias).chunk(3, 1);
  const auto reset = at::sigmoid(input_chunks[0] + hidden_chunks[0]);
  const auto update = at::sigmoid(input_chunks[1] + hidden_chunks[1]);
  const auto candidate = at::tanh(input_chunks[2] + reset * hidden_chunks[2]);
  auto hy = candidate + update * (hx - candidate);
  // Workspace as CUDA lays it out: reset, update, input and hidden parts of
  // the candidate's pre-activation, and the previous state.
  auto workspace = at::cat(std::vector<at::Tensor>{reset, update, input_chunks[2], hidden_chunks[2], hx}, 1);
  return std::make_tuple(hy, workspace);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  auto chunks = workspace.chunk(5, 1);
  const auto& reset = chunks[0];
  const auto& update = chunks[1];
  const auto& input_candidate = chunks[2];
  const auto& hidden_candidate = chunks[3];
  const auto& hx = chunks[4];
  const auto candidate = at::tanh(input_candidate + reset * hidden_candidate);
  auto grad_hx = grad_hy * update;
  const auto grad_update = grad_hy * (hx - candidate) * update * (1 - update);
  const auto grad_candidate = grad_hy * (1 - update) * (1 - candidate * candidate);
  const auto grad_reset = grad_candidate * hidden_candidate * reset * (1 - reset);
  auto grad_input_gates = at::cat(std::vector<at::Tensor>{grad_reset, grad_update, grad_candidate}, 1);
  auto grad_hidden_gates = at::cat(std::vector<at::Tensor>{grad_reset, grad_update, grad_candidate * reset}, 1);
  auto grad_input_bias = has_bias ? at::sum(grad_input_gates, {0}) : at::Tensor();
  auto grad_hidden_bias = has_bias ? at::sum(grad_hidden_gates, {0}) : at::Tensor();
  return std::make_tuple(grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias);
}

}  // namespace axon
