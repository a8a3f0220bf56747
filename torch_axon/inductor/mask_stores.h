// Float masks to and from bool tensors, for the C++ kernels Inductor
// generates for axon (kernel_source_rewrites.py puts this text after a
// kernel's cpp_prefix.h and routes its loads and stores of bool tensors here;
// pasted, not included, so it has no include guard).
//
// Inductor stores a float mask (a VecMask<float, 1>, as dropout's `rand > p`
// makes) into a bool tensor with VecMask::store, which converts it through
// ATen's generic bool vector: 64 scalar lanes built, blended and copied one at
// a time, about 4 ns an element on an AVX-512 host, more than drawing the
// element's random number. Loading one back (VecMask<float, 1>::from, as
// dropout's backward and torch.where do) converts one lane at a time. Here
// either is a few vector instructions, with ATen's values: a stored lane is
// true where its value, read as a float, is not zero (a NaN counts as not
// zero, a negative zero as zero); a loaded lane is all ones where its byte is
// not zero.
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

// Any other mask type, and partial vectors: as the generated code stores them.
template <typename Mask>
inline void axon_store_bools(Mask mask, bool* out, std::int64_t count) {
  mask.store(out, static_cast<int>(count));
}

#if defined(__AVX512F__)
inline void axon_store_bools(at::vec::VecMask<float, 1> mask, bool* out, std::int64_t count) {
  if (count != 16) {
    mask.store(out, static_cast<int>(count));
    return;
  }
  const __m512 values = at::vec::Vectorized<float>(mask);
  const __mmask16 nonzero = _mm512_cmp_ps_mask(values, _mm512_setzero_ps(), _CMP_NEQ_UQ);
  const __m128i bytes = _mm512_cvtepi32_epi8(_mm512_maskz_set1_epi32(nonzero, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
}
#endif

// Loads: partial vectors and hosts without AVX-512 as the generated code loads them.
inline at::vec::VecMask<float, 1> axon_load_float_mask(const bool* in, std::int64_t count) {
#if defined(__AVX512F__)
  if (count == 16) {
    const __m512i widened = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
    const __mmask16 nonzero = _mm512_test_epi32_mask(widened, widened);
    return at::vec::Vectorized<float>(_mm512_castsi512_ps(_mm512_maskz_set1_epi32(nonzero, -1)));
  }
#endif
  return at::vec::VecMask<float, 1>::from(in, static_cast<int>(count));
}
