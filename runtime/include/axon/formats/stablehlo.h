// Executable format "stablehlo-mlir": a StableHLO module as MLIR text.
//
// The module's public @main takes and returns statically shaped tensors. A
// launch names entry point "main", passes no constants, and binds @main's
// arguments, then its results, in order; each binding holds the array densely
// in row-major order. The results are written into their bindings when the
// launch runs, as if after every argument was read: a result's binding may
// share memory with an argument's (an in-place update). How a driver compiles
// the module is its own business (the emulated driver uses XLA's CPU compiler
// through its PJRT plugin).
#pragma once

#define AXON_FORMAT_STABLEHLO "stablehlo-mlir"
