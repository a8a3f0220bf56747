#include "host_execution/cpu_call_on_worker.h"

#include <c10/util/Exception.h>

#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/host_waits.h"
#include "host_execution/stream_launch.h"

namespace axon {
namespace {

// Keeps a kernel's warnings for the caller instead of printing them on the
// worker (the warning handler is per thread; the worker's prints to stderr).
class KeptWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override { warnings.push_back(warning); }
  std::vector<c10::Warning> warnings;
};

// What the call and the caller share. Owned by both: should the wait fail
// before the body has run, the body still finds it alive.
struct WorkerCall {
  c10::OperatorHandle op;
  torch::jit::Stack stack;
  std::exception_ptr failure;
  KeptWarnings warnings;
};

}  // namespace

void call_cpu_kernel_on_worker(axon_stream stream, const char* kernel_name, const c10::OperatorHandle& op,
                               torch::jit::Stack& stack) {
  auto call = std::make_shared<WorkerCall>(WorkerCall{op, std::move(stack), nullptr, {}});
  launch_on_stream(stream, kernel_name, [call] {
    const c10::WarningUtils::WarningHandlerGuard keep_warnings(&call->warnings);
    try {
      call->op.callBoxed(call->stack);
    } catch (...) {
      call->failure = std::current_exception();
    }
  });
  AXON_CHECK(wait_for_stream(stream), kernel_name);
  for (const c10::Warning& warning : call->warnings.warnings) c10::warn(warning);
  if (call->failure) std::rethrow_exception(call->failure);
  stack = std::move(call->stack);
}

}  // namespace axon
