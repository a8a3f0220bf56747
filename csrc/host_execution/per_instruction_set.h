// AXON_PER_INSTRUCTION_SET: compile a function once per x86-64 level
// (AVX-512, AVX2 with fused multiply-add, baseline), the copy picked when the
// library loads. The extension is built for baseline x86-64, so loops that
// should vectorize wide, or use fused multiply-adds, are marked with it
// (element_loops.cpp, philox_batches.cpp, attention_blocks.cpp). Elsewhere
// (another compiler or architecture) it marks nothing.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AXON_PER_INSTRUCTION_SET __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define AXON_PER_INSTRUCTION_SET
#endif
