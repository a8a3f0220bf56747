// Reading @main's signature from StableHLO text: each argument's and result's
// element type and shape, which fix the bytes each launch binding holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pjrt_abi.h"

namespace axon::pjrt {

struct ArrayType {
  BufferType type = kF32;
  std::size_t element_bytes = 4;
  std::vector<int64_t> dims;
  std::size_t bytes() const {
    std::size_t total = element_bytes;
    for (const int64_t dim : dims) total *= static_cast<std::size_t>(dim);
    return total;
  }
};

// The tensor types written `tensor<2x3xf32>` in text[begin, end), in order.
// Throws DriverError(AXON_ERROR_INVALID_VALUE) for an element type Axon does
// not bind.
std::vector<ArrayType> tensor_types(const std::string& text, std::size_t begin, std::size_t end);

// @main's signature in `text`: from "@main(" to the brace opening its body, and where its arrow is.
struct Signature {
  std::string text;
  std::size_t arrow = 0;
};

// Throws DriverError(AXON_ERROR_INVALID_VALUE) for a module without a public @main.
Signature main_signature(const std::string& text);

// `text` with @main taking one more argument per result, after its own: an
// array of the result's type that the result is written into
// (`tf.aliasing_output`, XLA's input-output alias). A caller that donates the
// memory it wants a result in as that argument gets the result there, with no
// copy out of the plugin's own buffer. XLA may still decline an alias (and
// then allocates the result itself), so a caller checks where each result
// landed. Throws what main_signature throws.
std::string with_results_in_place(const std::string& text);

}  // namespace axon::pjrt
