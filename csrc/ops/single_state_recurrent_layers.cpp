// nn.GRU and nn.RNN (tanh, ReLU) on axon: the CPU's route, whose input
// products are one matrix product per layer and direction.
//
// aten::gru, rnn_tanh and rnn_relu are composite, and the composite chooses
// by device. On the CPU each layer first projects the whole sequence
// through its input weights in one product (`inputs.device().is_cpu()` in
// ATen's FullLayer), then runs each time step's hidden product and the
// cell's operators. On any other device every step makes its own input
// product, and a GRU step calls the fused cell: twice the products, each a
// thin one, and a backward of four thin products per step. A 32-step GRU's
// training step took 21 ms on axon against 11.4 ms on the CPU. Axon takes the
// CPU's route: the same operators in the same order, so the CPU's bits, and
// autograd records each of them (registered for AutogradPrivateUse1 too).
//
// Everything else goes to the composite, which also raises the errors: an
// empty input (its "sequence length" message), tensor subclasses (FakeTensor
// while torch.compile traces), operands on several devices or of several
// dtypes, and sizes that do not fit together. Packed sequences (the `.data`
// overloads) keep the composite.
#include <ATen/TensorOperators.h>
#include <ATen/TensorSubclassLikeUtils.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/gru_native.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rnn_relu_native.h>
#include <ATen/ops/rnn_tanh_native.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tanh.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "ops/recurrent_layer_sizes.h"

namespace axon {
namespace {

enum class Cell { kGru, kTanh, kRelu };

int64_t gates(Cell cell) { return cell == Cell::kGru ? 3 : 1; }

// One layer and direction's weights: input and hidden weights, then their
// biases (undefined without biases).
struct Weights {
  at::Tensor input, hidden, input_bias, hidden_bias;
};

// Whether the call is one the CPU's route computes as the CPU would: one
// axon device, one dtype, plain tensors, a non-empty time-major or
// batch-major input and states and weights whose sizes fit it.
bool takes_the_cpus_route(Cell cell, const at::Tensor& input, const at::Tensor& hx, at::TensorList params,
                          bool has_biases, int64_t num_layers, bool bidirectional, bool batch_first) {
  if (!input.is_privateuseone() || input.dim() != 3 || input.numel() == 0 || at::isTensorSubclassLike(input)) {
    return false;
  }
  return recurrent_layer_sizes_fit(input, hx, params, gates(cell), has_biases, num_layers, bidirectional, batch_first);
}

// One time step from its projected input; the CPU's cells (ATen's SimpleCell
// and GRUCell with the input precomputed), operator for operator.
at::Tensor step(Cell cell, const at::Tensor& projected_input, const at::Tensor& hidden, const Weights& w) {
  if (cell != Cell::kGru) {
    at::Tensor pre_activation = at::linear(hidden, w.hidden, w.hidden_bias).add_(projected_input);
    return cell == Cell::kTanh ? at::tanh(pre_activation) : at::relu(pre_activation);
  }
  const std::vector<at::Tensor> input_gates = projected_input.unsafe_chunk(3, 1);
  std::vector<at::Tensor> hidden_gates = at::linear(hidden, w.hidden, w.hidden_bias).unsafe_chunk(3, 1);
  const at::Tensor reset_gate = hidden_gates[0].add_(input_gates[0]).sigmoid_();
  const at::Tensor update_gate = hidden_gates[1].add_(input_gates[1]).sigmoid_();
  const at::Tensor new_gate = input_gates[2].add(hidden_gates[2].mul_(reset_gate)).tanh_();
  return (hidden - new_gate).mul_(update_gate).add_(new_gate);
}

// One layer in one direction over a time-major input: the whole sequence's
// input product, then the steps (last to first when `reverse`). Returns the
// stacked outputs in time order and the final hidden state.
std::pair<at::Tensor, at::Tensor> run_direction(Cell cell, const at::Tensor& input, at::Tensor hidden, const Weights& w,
                                                bool reverse) {
  std::vector<at::Tensor> steps = at::linear(input, w.input, w.input_bias).unbind(0);
  if (reverse) std::reverse(steps.begin(), steps.end());
  std::vector<at::Tensor> outputs;
  outputs.reserve(steps.size());
  for (const at::Tensor& projected : steps) {
    hidden = step(cell, projected, hidden, w);
    outputs.push_back(hidden);
  }
  if (reverse) std::reverse(outputs.begin(), outputs.end());
  return {at::stack(outputs, 0), hidden};
}

std::tuple<at::Tensor, at::Tensor> run_layers(Cell cell, const at::Tensor& input, const at::Tensor& hx,
                                              at::TensorList params, bool has_biases, int64_t num_layers,
                                              double dropout, bool train, bool bidirectional, bool batch_first) {
  const int64_t directions = bidirectional ? 2 : 1, per_layer = has_biases ? 4 : 2;
  const std::vector<at::Tensor> initial = hx.unbind(0);
  std::vector<at::Tensor> final_hidden;
  final_hidden.reserve(initial.size());
  at::Tensor layer_input = batch_first ? input.transpose(0, 1) : input;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<at::Tensor> outputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const int64_t index = layer * directions + direction;
      const at::Tensor* p = params.data() + index * per_layer;
      const Weights w{p[0], p[1], has_biases ? p[2] : at::Tensor(), has_biases ? p[3] : at::Tensor()};
      auto [output, hidden] = run_direction(cell, layer_input, initial[index], w, /*reverse=*/direction > 0);
      outputs.push_back(std::move(output));
      final_hidden.push_back(std::move(hidden));
    }
    layer_input = directions == 1 ? outputs[0] : at::cat(outputs, outputs[0].dim() - 1);
    if (dropout != 0 && train && layer < num_layers - 1) layer_input = at::dropout(layer_input, dropout, true);
  }
  if (batch_first) layer_input.transpose_(0, 1);
  return {layer_input, at::stack(final_hidden, 0)};
}

template <Cell cell>
std::tuple<at::Tensor, at::Tensor> single_state_rnn(const at::Tensor& input, const at::Tensor& hx,
                                                    at::TensorList params, bool has_biases, int64_t num_layers,
                                                    double dropout, bool train, bool bidirectional, bool batch_first) {
  if (!takes_the_cpus_route(cell, input, hx, params, has_biases, num_layers, bidirectional, batch_first)) {
    if constexpr (cell == Cell::kGru) {
      return at::native::gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
    } else if constexpr (cell == Cell::kTanh) {
      return at::native::rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                                  batch_first);
    } else {
      return at::native::rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                                  batch_first);
    }
  }
  return run_layers(cell, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gru.input", TORCH_FN(single_state_rnn<Cell::kGru>));
  m.impl("rnn_tanh.input", TORCH_FN(single_state_rnn<Cell::kTanh>));
  m.impl("rnn_relu.input", TORCH_FN(single_state_rnn<Cell::kRelu>));
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("gru.input", TORCH_FN(single_state_rnn<Cell::kGru>));
  m.impl("rnn_tanh.input", TORCH_FN(single_state_rnn<Cell::kTanh>));
  m.impl("rnn_relu.input", TORCH_FN(single_state_rnn<Cell::kRelu>));
}

}  // namespace
}  // namespace axon
