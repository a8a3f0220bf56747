// Turns a driver status into a PyTorch error.
//
// AXON_CHECK(call, "what was being done") evaluates a driver call and, on
// failure, throws the c10 error type that maps to the right Python exception
// (torch.OutOfMemoryError for AXON_ERROR_OUT_OF_MEMORY, ValueError-like
// IndexError for bad devices, RuntimeError otherwise), with the driver's own
// detail appended.
#pragma once

#include <c10/util/Exception.h>

#include <string>

#include "axon/runtime.h"

namespace axon {

// Throws for any status but AXON_SUCCESS; `context` names the operation.
[[noreturn]] void throw_status(axon_status status, const char* context);

// The same with the driver's detail given: for a status whose detail the
// caller kept while it made other driver calls (the detail lasts until the
// thread's next call).
[[noreturn]] void throw_status(axon_status status, const char* context, const std::string& detail);

}  // namespace axon

#define AXON_CHECK(call, context)                        \
  do {                                                   \
    const axon_status axon_check_status_ = (call);       \
    if (axon_check_status_ != AXON_SUCCESS) {            \
      ::axon::throw_status(axon_check_status_, context); \
    }                                                    \
  } while (0)
