// nn.LSTM on axon: oneDNN's LSTM layers, as on the CPU.
//
// aten::lstm is composite. On the CPU (oneDNN enabled, float32, no
// projections) it runs each layer and direction as one oneDNN RNN primitive
// (aten::mkldnn_rnn_layer, whose backward is another); on every other device
// the composite unrolls the sequence into a matrix product and a fused cell
// per time step, a few thousand operators for a training step of a 2-layer
// LSTM over 64 steps. Where the host addresses axon's memory, axon takes the
// CPU's route: the same layer operators, queued on the stream by the generic
// kernel, recorded by autograd with their own derivative. Same primitive, same
// arguments: the CPU's bits.
//
// bfloat16 takes the same route where the CPU's does (where its oneDNN takes
// bfloat16: a 64-step LSTM's forward and backward took 7.7 times the CPU's
// time unrolled). Every other call takes the composite, which also raises
// the errors: other dtypes, projections, oneDNN disabled, an empty input,
// operands on several devices, memory the host cannot address (compiled
// eager kernels serve it),
// autocast on (the composite's products take autocast's dtype, as the CPU's
// LSTM does), tensor subclasses (FakeTensor while torch.compile traces), and
// sizes that do not fit together. That last check is axon's own: the CPU's
// oneDNN route does not make it, and writes out of bounds when hidden states
// or weights disagree with the input (reachable through torch._VF.lstm).
// Registered for PrivateUse1, and for AutogradPrivateUse1 so that autograd
// sees the layer operators rather than the composite's.
#include <ATen/Context.h>
#include <ATen/TensorSubclassLikeUtils.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/lstm_native.h>
#include <ATen/ops/mkldnn_rnn_layer.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <vector>

#include "compiled_execution/compiled_kernel.h"
#include "host_execution/device_memory_views.h"
#include "ops/recurrent_layer_sizes.h"

namespace axon {
namespace {

// oneDNN's number for an LSTM (ideep::rnn_kind::LSTM), the `mode` of mkldnn_rnn_layer.
constexpr int64_t kOneDnnLstm = 2;

// Whether the CPU runs bfloat16 LSTMs as oneDNN layers: its own test
// (mkldnn::_is_mkldnn_bf16_supported, the check its use_mkldnn makes), asked once.
bool cpu_runs_bfloat16_layers() {
  static const bool supported =
      c10::Dispatcher::singleton().findSchemaOrThrow("mkldnn::_is_mkldnn_bf16_supported", "").typed<bool()>().call();
  return supported;
}

// Whether the CPU would run this call as oneDNN layers (its use_mkldnn, for
// float32, and bfloat16 where its oneDNN takes that), on one axon device
// whose memory the host addresses, with sizes that fit together.
bool onednn_layers(const at::Tensor& input, at::TensorList hx, at::TensorList params, bool has_biases,
                   int64_t num_layers, bool bidirectional, bool batch_first) {
  const bool dtype_taken =
      input.scalar_type() == at::kFloat || (input.scalar_type() == at::kBFloat16 && cpu_runs_bfloat16_layers());
  if (!at::globalContext().userEnabledMkldnn() || at::autocast::is_autocast_enabled(c10::DeviceType::PrivateUse1) ||
      hx.size() != 2 || !input.is_privateuseone() || !dtype_taken || input.dim() != 3 || input.numel() == 0 ||
      at::isTensorSubclassLike(input)) {
    return false;
  }
  const c10::Device device = input.device();
  if (!host_addressable(device.index()) || compiled_kernels_first(device)) return false;
  // The LSTM's four gates; a state of another size means projections.
  return recurrent_layer_sizes_fit(input, hx, params, /*gates=*/4, has_biases, num_layers, bidirectional, batch_first);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm(const at::Tensor& input, at::TensorList hx, at::TensorList params,
                                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                                    bool bidirectional, bool batch_first) {
  if (!onednn_layers(input, hx, params, has_biases, num_layers, bidirectional, batch_first)) {
    return at::native::lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
  }
  // The CPU's sequence of calls (aten/src/ATen/native/mkldnn/RNN.cpp), argument for argument: the input made
  // time-major and contiguous, batch_first still passed to each layer.
  at::Tensor layer_input = (batch_first ? input.transpose(0, 1) : input).contiguous();
  const at::Tensor h0 = hx[0].contiguous(), c0 = hx[1].contiguous();
  const int64_t directions = bidirectional ? 2 : 1, per_layer = has_biases ? 4 : 2, hidden_size = h0.size(2);
  std::vector<at::Tensor> outputs(directions), hy(num_layers * directions), cy(num_layers * directions);
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    for (int64_t direction = 0; direction < directions; ++direction) {
      const int64_t index = layer * directions + direction;
      const at::Tensor* weights = params.data() + index * per_layer;
      const at::Tensor bias_ih = has_biases ? weights[2] : at::zeros(weights[0].sizes(), weights[0].options());
      const at::Tensor bias_hh = has_biases ? weights[3] : at::zeros(weights[1].sizes(), weights[1].options());
      auto layer_results = at::mkldnn_rnn_layer(layer_input, weights[0], weights[1], bias_ih, bias_hh, h0[index],
                                                c0[index], /*reverse=*/direction > 0, /*batch_sizes=*/{}, kOneDnnLstm,
                                                hidden_size, num_layers, has_biases, bidirectional, batch_first, train);
      outputs[direction] = std::get<0>(layer_results);
      hy[index] = std::get<1>(layer_results);
      cy[index] = std::get<2>(layer_results);
    }
    layer_input = directions == 1 ? outputs[0] : at::cat(outputs, -1);
    if (dropout != 0 && train && layer < num_layers - 1) layer_input = at::dropout(layer_input, dropout, true);
  }
  at::Tensor output = batch_first ? layer_input.transpose(0, 1) : layer_input;
  return {output, at::stack(hy, 0), at::stack(cy, 0)};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("lstm.input", TORCH_FN(lstm)); }

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { m.impl("lstm.input", TORCH_FN(lstm)); }

}  // namespace
}  // namespace axon
