// Output shapes of the generic kernel, from the operator's meta kernel.
//
// Running an operator on meta tensors validates the call (raising the same
// shape and dtype errors as the CPU) and yields its outputs' sizes, strides
// and dtypes, but costs tens of microseconds, most of it in PyTorch's Python
// meta registrations. The result depends only on the arguments' metadata and
// non-tensor values, never on tensor contents, so it is cached under exactly
// that key: a training loop pays for each distinct call shape once.
//
// Meta kernels sometimes disagree with the CPU kernel on output strides or
// even shapes. So that axon results match the CPU's exactly, a new call shape
// also runs the CPU kernel once on stand-in zero tensors of the same
// metadata (on the calling thread, without waiting for the device) and
// adopts what it produces (see adopt_cpu_metadata in the .cpp).
//
// That CPU run costs about a full computation, at every new shape. Once it
// has shown, for one call, that the CPU gives exactly the meta kernel's
// layouts, later calls of the same layout class (the same operator,
// dtypes, ranks, non-tensor values, dimensions of size 0, 1 or more, stride
// order with its ties, suggested memory format and contiguity, every tensor
// dense or a broadcast of a dense one; only sizes differ) run the meta kernel alone. What
// that gives up: an error that only the CPU kernel raises at the new size
// (the meta kernel checks shapes too) is raised by the next synchronizing
// call instead of by the call itself; and where the CPU's layout choice turns
// on size values (channel_shuffle when channels equal groups) or on the
// strides of single dimensions, the result's strides can differ from the
// CPU's, its values not (such calls run the functional kernel and copy).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <memory>
#include <vector>

#include "ops/operator_plan.h"

namespace axon {

struct MetaOutcome {
  // The meta run failed (no meta kernel, or the shape depends on data): the
  // operator must run synchronously on real data.
  bool needs_data = false;
  std::vector<c10::IValue> returns;  // meta tensors (or lists) per return
  // The `.out` overload resizes exactly-sized outputs (scratch use): run the
  // functional kernel and copy its results instead.
  bool avoid_out_variant = false;
  std::vector<c10::IValue> arguments_after;  // meta twin of each argument after the run
  // Warnings the CPU gives on every such call, not just the first in the
  // process: replayed on each call the cache answers. (Resized out= tensors
  // are warned about by the caller, which sees the real tensors.)
  std::vector<c10::Warning> repeated_warnings;
  // While the outcome is worked out: the CPU kernel's warnings on stand-ins,
  // and those a second run gave again.
  std::vector<c10::Warning> cpu_warnings;
  std::vector<c10::Warning> cpu_repeated_warnings;
  // The CPU kernel, run on stand-ins, warned about resizing a non-empty out=
  // tensor as ATen's resize_output does: a cached call resizing one warns the
  // same. (Kernels that resize silently, or with a warning of their own, as
  // arange does, among the repeated ones, do not.)
  bool warns_about_resized_outputs = false;
  // The meta kernel's own output metadata (sizes, strides, dtypes of the
  // returns and of the arguments after the call), before the CPU's metadata
  // replaced it: a call that differs only in a Scalar's value may reuse this
  // outcome when its meta kernel gives the same (see infer_outputs).
  std::vector<int64_t> meta_signature;
  // The CPU kernel accepted the stand-ins (varied ones, for an operator run
  // through its `.out` overload, whose results were compared) and gave
  // exactly the meta kernel's layouts, with no warning and no out= trouble:
  // calls of the same layout class at other sizes may trust their meta run
  // alone (see infer_outputs).
  bool proves_meta_layouts = false;
  // It would have, had the CPU kernel accepted varied stand-ins rather than
  // zeros or ones (large stand-ins are zeros first: ops/stand_ins.h).
  bool would_prove_on_varied_values = false;
};

// Meta outcome for calling `op` with `args` (axon tensors, CPU scalars, ...).
// Shape/dtype errors propagate as exceptions and are not cached. Warnings
// the call gives reach the caller's warning handler, cached or not.
// `from_cache` tells whether the outcome was cached (no kernel ran, so
// warnings about resized out= tensors are the caller's to give).
std::shared_ptr<const MetaOutcome> infer_outputs(const c10::OperatorHandle& op, const OperatorPlan& plan,
                                                 c10::ArrayRef<c10::IValue> args, bool& from_cache);

// How many calls so far ran the CPU kernel on stand-ins to learn their
// outcome (cache misses that reached the CPU reference); for tests.
int64_t reference_runs();

// A meta tensor with `tensor`'s sizes, strides, dtype and conj/neg flags
// (no autograd); anything but an axon tensor is returned unchanged.
at::Tensor to_meta(const at::Tensor& tensor);

}  // namespace axon
