// Uniform random floats for a vector's worth of offsets at once, for the C++
// kernels Inductor generates for axon (kernel_source_rewrites.py puts this
// text after the cpp_prefix.h of a kernel that draws random numbers; pasted,
// not included, so it has no include guard).
//
// Inductor's CPU code draws element i's number as
// normalized_rand_cpu(seed, offset_i) (torch/csrc/inductor/cpp_prefix.h): a
// fresh Philox4x32-10 engine per element, keyed by the seed, its counter at
// the offset, the first 32-bit word of its first block scaled to [0, 1). A
// vectorized kernel calls it once per lane, and since Inductor compiles with
// loop vectorization off, every element pays ten scalar rounds: dropout in a
// compiled training graph cost more than the rest of its kernel. Here the ten
// rounds run on all lanes together, with the same words, the same scaling and
// so the same floats bit for bit.
#include <cstdint>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace axon_philox {

// The Philox4x32-10 constants: the key's increment per round and the two
// round multipliers.
constexpr std::uint32_t kKeyStep0 = 0x9E3779B9u;
constexpr std::uint32_t kKeyStep1 = 0xBB67AE85u;
constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;
constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr int kRounds = 10;
// The largest float such that 0x7FFFFFFF times it rounds below 1.
constexpr float kUnitScale = 4.6566127342e-10f;

// One lane: the first word of the block at counter (offset, 0, 0, 0) under key
// (seed, 0).
inline std::uint32_t first_word(std::uint32_t seed, std::uint32_t offset) {
  std::uint32_t c0 = offset, c1 = 0, c2 = 0, c3 = 0;
  std::uint32_t k0 = seed, k1 = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::uint64_t product0 = static_cast<std::uint64_t>(kMultiplier0) * c0;
    const std::uint64_t product1 = static_cast<std::uint64_t>(kMultiplier1) * c2;
    const std::uint32_t next0 = static_cast<std::uint32_t>(product1 >> 32) ^ c1 ^ k0;
    const std::uint32_t next2 = static_cast<std::uint32_t>(product0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<std::uint32_t>(product1);
    c3 = static_cast<std::uint32_t>(product0);
    c0 = next0;
    c2 = next2;
    k0 += kKeyStep0;
    k1 += kKeyStep1;
  }
  return c0;
}

inline float to_unit(std::uint32_t word) { return static_cast<float>(word & 0x7FFFFFFFu) * kUnitScale; }

#if defined(__AVX512F__)
constexpr int kVectorLanes = 16;
using Words = __m512i;
inline Words load_words(const std::uint32_t* words) { return _mm512_loadu_si512(words); }
inline Words broadcast(std::uint32_t word) { return _mm512_set1_epi32(static_cast<int>(word)); }
inline Words exclusive_or(Words a, Words b) { return _mm512_xor_si512(a, b); }
inline Words multiply_low(Words a, Words b) { return _mm512_mullo_epi32(a, b); }
// The high words of the 64-bit lane products: even lanes from one widening
// multiply, odd lanes (shifted down) from another.
inline Words multiply_high(Words a, Words b) {
  const __m512i even = _mm512_mul_epu32(a, b);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
}
inline void store_unit(Words words, float* result) {
  const __m512i magnitude = _mm512_and_si512(words, _mm512_set1_epi32(0x7FFFFFFF));
  _mm512_storeu_ps(result, _mm512_mul_ps(_mm512_cvtepi32_ps(magnitude), _mm512_set1_ps(kUnitScale)));
}
#elif defined(__AVX2__)
constexpr int kVectorLanes = 8;
using Words = __m256i;
inline Words load_words(const std::uint32_t* words) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(words));
}
inline Words broadcast(std::uint32_t word) { return _mm256_set1_epi32(static_cast<int>(word)); }
inline Words exclusive_or(Words a, Words b) { return _mm256_xor_si256(a, b); }
inline Words multiply_low(Words a, Words b) { return _mm256_mullo_epi32(a, b); }
inline Words multiply_high(Words a, Words b) {
  const __m256i even = _mm256_mul_epu32(a, b);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32));
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}
inline void store_unit(Words words, float* result) {
  const __m256i magnitude = _mm256_and_si256(words, _mm256_set1_epi32(0x7FFFFFFF));
  _mm256_storeu_ps(result, _mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), _mm256_set1_ps(kUnitScale)));
}
#else
constexpr int kVectorLanes = 0;
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
// kVectorLanes lanes of first_word, scaled.
inline void unit_floats(std::uint32_t seed, const std::uint32_t* offsets, float* result) {
  Words c0 = load_words(offsets);
  Words c1 = broadcast(0), c2 = broadcast(0), c3 = broadcast(0);
  std::uint32_t k0 = seed, k1 = 0;
  const Words multiplier0 = broadcast(kMultiplier0), multiplier1 = broadcast(kMultiplier1);
  for (int round = 0; round < kRounds; ++round) {
    const Words next0 = exclusive_or(exclusive_or(multiply_high(multiplier1, c2), c1), broadcast(k0));
    const Words next2 = exclusive_or(exclusive_or(multiply_high(multiplier0, c0), c3), broadcast(k1));
    c1 = multiply_low(multiplier1, c2);
    c3 = multiply_low(multiplier0, c0);
    c0 = next0;
    c2 = next2;
    k0 += kKeyStep0;
    k1 += kKeyStep1;
  }
  store_unit(c0, result);
}
#endif

}  // namespace axon_philox

// What the generated kernel calls in place of its per-lane loop: `result[i]`
// becomes normalized_rand_cpu(seed, offsets[i]) for i below `Lanes`. The seed
// and offsets are truncated to 32 bits, as that function's parameters do.
template <int Lanes, typename Seed, typename Offset>
inline void axon_uniform_rand_lanes(Seed seed, const Offset* offsets, float* result) {
  const std::uint32_t key = static_cast<std::uint32_t>(seed);
  std::uint32_t words[Lanes];
  for (int i = 0; i < Lanes; ++i) words[i] = static_cast<std::uint32_t>(offsets[i]);
  int done = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
  for (; done + axon_philox::kVectorLanes <= Lanes; done += axon_philox::kVectorLanes) {
    axon_philox::unit_floats(key, words + done, result + done);
  }
#endif
  for (; done < Lanes; ++done) result[done] = axon_philox::to_unit(axon_philox::first_word(key, words[done]));
}
