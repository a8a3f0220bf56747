#include "distributed/collective_work.h"

#include <ATen/core/jit_type.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <set>
#include <utility>

namespace axon::distributed {
namespace {

// "axon:all_reduce", with a lifetime as long as the process: RecordFunction
// keeps the pointer it is given.
const char* profiling_title(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> titles;
  std::lock_guard<std::mutex> lock(mutex);
  return titles.insert("axon:" + name).first->c_str();
}

}  // namespace

std::exception_ptr make_backend_error(const std::string& message) {
  try {
    C10_THROW_ERROR(DistBackendError, message);
  } catch (...) {
    return std::current_exception();
  }
}

CollectiveWork::CollectiveWork(int rank, c10d::OpType type, std::string name, c10::Device device,
                               std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout, uint64_t sequence)
    : c10d::Work(rank, type, profiling_title(name)),
      name_(std::move(name)),
      device_(device),
      outputs_(std::move(outputs)),
      timeout_(timeout),
      sequence_(sequence),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::vector<c10::Device>{device})) {}

std::string CollectiveWork::describe() const {
  return c10::str(name_, " (collective #", sequence_, " of rank ", rank_, ")");
}

bool CollectiveWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool CollectiveWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

std::exception_ptr CollectiveWork::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exception_;
}

int CollectiveWork::sourceRank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(completed_, "[axon ", name_, "] sourceRank() is known only once the receive completed");
  return source_rank_;
}

std::vector<at::Tensor> CollectiveWork::result() { return outputs_; }

void CollectiveWork::synchronize() {
  // Future::wait() orders the current streams after the completion event and
  // records the outputs' memory as used by them.
  future_->wait();
  if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
}

bool CollectiveWork::wait(std::chrono::milliseconds timeout) {
  const auto limit = timeout == kNoTimeout ? timeout_ : timeout;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, limit, [this] { return completed_; })) {
      std::rethrow_exception(
          make_backend_error(c10::str("[axon] ", describe(), " did not complete within ", limit.count(),
                                      " ms: a peer may have died, be stuck, or not have called the same collective")));
    }
    if (exception_) std::rethrow_exception(exception_);
  }
  synchronize();
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> CollectiveWork::getFuture() { return future_; }

void CollectiveWork::complete(int source_rank) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source_rank_ = source_rank;
  }
  // Records the completion event on the current (completion) stream before
  // anyone can observe the future as done.
  future_->markCompleted(c10::IValue(outputs_));
  finish();
}

void CollectiveWork::fail(std::exception_ptr error) {
  future_->setErrorIfNeeded(error);
  finish(error);
}

}  // namespace axon::distributed
