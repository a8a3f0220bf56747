// A hash of a key made of 64-bit words (call metadata flattened into
// integers), for the caches of call shapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace axon {

struct WordHash {
  size_t operator()(const std::vector<int64_t>& words) const {
    uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the words
    for (const int64_t word : words) {
      hash ^= static_cast<uint64_t>(word);
      hash *= 1099511628211ULL;
    }
    return static_cast<size_t>(hash);
  }
};

}  // namespace axon
