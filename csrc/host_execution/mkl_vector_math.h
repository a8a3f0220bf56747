// The MKL vector math functions axon's host kernels call, and the mode
// PyTorch's own CPU kernels call them in.
//
// libtorch_cpu exports them where PyTorch is built with MKL. They are
// declared weak, so that a build without MKL leaves them null: a kernel that
// uses one checks it first and otherwise stays out (element_loops.cpp's MKL
// square roots, attention_blocks.cpp's exponentials).
#pragma once

extern "C" {
void vmsSqrt(int n, const float* in, float* out, long long mode) __attribute__((weak));
void vmdSqrt(int n, const double* in, double* out, long long mode) __attribute__((weak));
void vmsExp(int n, const float* in, float* out, long long mode) __attribute__((weak));
}

namespace axon {

// High accuracy, denormals kept, errors ignored: the mode ATen passes to
// these functions, so that results match the CPU's kernels.
constexpr long long kMklVectorMathMode = 0x2 | 0x100 | 0x140000;

}  // namespace axon
