#include "ops/recurrent_layer_sizes.h"

#include <ATen/TensorSubclassLikeUtils.h>

#include <array>

namespace axon {

bool recurrent_layer_sizes_fit(const at::Tensor& input, at::TensorList states, at::TensorList params, int64_t gates,
                               bool has_biases, int64_t num_layers, bool bidirectional, bool batch_first) {
  const auto fits = [&](const at::Tensor& t, c10::IntArrayRef sizes) {
    return t.defined() && t.device() == input.device() && t.scalar_type() == input.scalar_type() &&
           t.layout() == c10::kStrided && !at::isTensorSubclassLike(t) && t.sizes().equals(sizes);
  };
  const int64_t directions = bidirectional ? 2 : 1, per_layer = has_biases ? 4 : 2;
  if (states.empty() || num_layers < 1 || static_cast<int64_t>(params.size()) != num_layers * directions * per_layer) {
    return false;
  }
  const int64_t batch = input.size(batch_first ? 0 : 1),
                hidden = states[0].defined() && states[0].dim() == 3 ? states[0].size(2) : -1;
  const std::array<int64_t, 3> state_sizes = {num_layers * directions, batch, hidden};
  if (hidden < 1) return false;
  for (const at::Tensor& state : states) {
    if (!fits(state, state_sizes)) return false;
  }
  const int64_t gate_rows = gates * hidden;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    const int64_t layer_input = layer == 0 ? input.size(2) : hidden * directions;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const at::Tensor* weights = params.data() + (layer * directions + direction) * per_layer;
      const std::array<int64_t, 2> ih = {gate_rows, layer_input}, hh = {gate_rows, hidden};
      const std::array<int64_t, 1> bias = {gate_rows};
      if (!fits(weights[0], ih) || !fits(weights[1], hh)) return false;
      if (has_biases && (!fits(weights[2], bias) || !fits(weights[3], bias))) return false;
    }
  }
  return true;
}

}  // namespace axon
