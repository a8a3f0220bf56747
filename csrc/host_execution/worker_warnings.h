// Warnings of kernels that run on a device's worker thread.
//
// A call's warnings reach its caller at the call: the generic kernel replays
// those its meta kernel or the CPU kernel gave on stand-ins (ops/
// shape_inference.cpp), as the CPU gives them on every call. The same kernel
// then warns again when the worker runs it, where no Python handler is
// installed; that second copy is dropped. Other warnings from the worker go to
// c10's base handler (standard error), as they always did.
#pragma once

#include <c10/util/Exception.h>

namespace axon {

// `warning` reached the caller of a call whose kernel is queued.
void note_warning_given_at_call(const c10::Warning& warning);

// Makes the calling (worker) thread's warnings go through the rule above.
void install_worker_warning_handler();

}  // namespace axon
