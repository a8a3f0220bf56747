// Which sparse calls with dense results can be queued on the stream.
//
// Most sparse results have sizes that depend on data, but many calls give
// dense results whose sizes follow from the arguments' sizes alone: a sparse
// matrix times a dense one, reductions to dense. Such a call can be queued
// like a dense kernel if its results' sizes and strides are known without
// running it. They are predicted by the dense operator's meta kernel, run
// with a strided stand-in for each sparse argument; the prediction is
// trusted for a call signature (operator; each argument's layout, dtype,
// device, sizes, and strides or sparse and block dimensions; every other
// argument's value) once a synchronous run of that signature gave exactly
// the predicted results. A new size is a new signature: its first call runs
// synchronously, so errors the CPU raises at the call (mismatched sizes the
// dense meta kernel would broadcast) are raised there.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/operator_plan.h"

namespace axon {

// The dense results the dense meta kernel predicts, or null where a
// stand-in cannot be made (nested tensors, mutated arguments) or the meta
// kernel refuses the call.
std::optional<std::vector<at::Tensor>> predict_dense_results(const c10::OperatorHandle& op, const OperatorPlan& plan,
                                                             c10::ArrayRef<c10::IValue> args);

// One call signature, flattened.
std::vector<int64_t> call_signature(c10::ArrayRef<c10::IValue> args);

// What synchronous runs said of a signature's predictions: confirmed (true),
// refuted (false), or nothing yet.
std::optional<bool> prediction_verdict(const c10::FunctionSchema& schema, const std::vector<int64_t>& signature);

// Records whether a synchronous run's `results` are exactly `predicted`.
void record_prediction(const c10::FunctionSchema& schema, std::vector<int64_t> signature,
                       const std::vector<at::Tensor>& predicted, c10::ArrayRef<c10::IValue> results);

}  // namespace axon
