// The size check both of axon's recurrent-layer routes make before taking a
// call (recurrent_layers.cpp for nn.LSTM, single_state_recurrent_layers.cpp
// for nn.GRU and nn.RNN); calls that fail it take ATen's composite, which
// raises the errors.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace axon {

// Whether `states` (the initial hidden state, and the cell state for an LSTM)
// are [layers x directions, batch, hidden] and `params` hold, per layer and
// direction, input weights [gates x hidden, layer input], hidden weights
// [gates x hidden, hidden] and, with biases, two [gates x hidden] biases,
// for a 3-d time-major (or, with batch_first, batch-major) `input`; every one
// a plain strided tensor on input's device with input's dtype. `hidden` is
// read from the first state.
bool recurrent_layer_sizes_fit(const at::Tensor& input, at::TensorList states, at::TensorList params, int64_t gates,
                               bool has_biases, int64_t num_layers, bool bidirectional, bool batch_first);

}  // namespace axon
