// Checks that device work computes and the host reports in stream order.
//
// A compiled executable can compute, next to its results, whether its inputs
// were valid: a table of [position, value] int64 pairs, one per check, where
// position -1 means the check passed and otherwise `value` is the first
// offending element (torch_axon/compile/lowering/checks.py). Reading that
// table right after the launch makes the host wait for the whole queue. This
// reports it the way an eager kernel reports its own failure instead: behind
// the executable on the same stream, a driver copy brings the table to host
// memory and a host function fails the stream with the first failed check's
// error. The launching call returns at once; the error is raised by the next
// call that waits for the stream (at once under AXON_LAUNCH_BLOCKING=1).
//
// Needs the driver's host functions (AXON_CAPABILITY_HOST_FUNCTIONS). The
// table moves by a driver copy, so device memory need not be addressable by
// the host.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "axon/status.h"

namespace axon {

struct StreamCheck {
  // The kind of failure (AXON_ERROR_TASK_FAILED or a named kind), which picks
  // the Python exception raised at synchronization (core/check.cpp).
  axon_status status;
  // The error message; each "{value}" becomes the offending element.
  std::string message;
};

// Shared by every report of one executable: the strings are built once.
using StreamChecks = std::shared_ptr<const std::vector<StreamCheck>>;

// Queues, on the current stream of `table`'s device, the report of `table`
// (a contiguous [checks->size(), 2] int64 axon tensor the stream's earlier
// work writes) against `checks`, in order: the first failed one is reported.
void report_checks_in_stream_order(const at::Tensor& table, const StreamChecks& checks);

// Checks from (Python exception class name, message) pairs, as the compile
// path describes them (torch_axon/compile/lowering/checks.py). Each is
// reported with the status of its exception's kind: "IndexError" as
// AXON_ERROR_TASK_OUT_OF_RANGE, "ValueError", "TypeError",
// "NotImplementedError" and "LinAlgError" as theirs, any other as
// AXON_ERROR_TASK_FAILED (a RuntimeError).
StreamChecks stream_checks(const std::vector<std::pair<std::string, std::string>>& exception_and_message);

}  // namespace axon
