// ProcessGroupAxon: lifecycle, streams, coalescing and splitting. The
// collectives themselves are in process_group_axon_collectives.cpp.
#include "distributed/process_group_axon.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <cstdlib>
#include <string>
#include <utility>

#include "core/stream.h"

namespace axon::distributed {
namespace {

// Communication outranks compute, as NCCL's high-priority streams do.
constexpr int kCommunicationPriority = -2;

// Waits for every work of a coalesced block; its result is theirs, in order.
class CoalescedWork : public c10d::Work {
 public:
  CoalescedWork(int rank, std::vector<c10::intrusive_ptr<CollectiveWork>> works)
      : c10d::Work(rank, c10d::OpType::COALESCED), works_(std::move(works)) {}

  bool isCompleted() override {
    for (auto& work : works_) {
      if (!work->isCompleted()) return false;
    }
    return true;
  }
  bool isSuccess() const override {
    for (auto& work : works_) {
      if (!work->isSuccess()) return false;
    }
    return true;
  }
  std::exception_ptr exception() const override {
    for (auto& work : works_) {
      if (auto error = work->exception()) return error;
    }
    return nullptr;
  }
  bool wait(std::chrono::milliseconds timeout) override {
    for (auto& work : works_) work->wait(timeout);
    return true;
  }
  void synchronize() override {
    for (auto& work : works_) work->synchronize();
  }
  std::vector<at::Tensor> result() override {
    std::vector<at::Tensor> tensors;
    for (auto& work : works_) {
      for (auto& tensor : work->result()) tensors.push_back(tensor);
    }
    return tensors;
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    if (works_.size() == 1) return works_.front()->getFuture();
    std::vector<c10::intrusive_ptr<c10::ivalue::Future>> futures;
    for (auto& work : works_) futures.push_back(work->getFuture());
    auto all = c10::collectAll(c10::List<c10::intrusive_ptr<c10::ivalue::Future>>(futures));
    auto tensors = result();
    return all->then([tensors](c10::ivalue::Future&) { return c10::IValue(tensors); },
                     c10::ListType::create(c10::TensorType::get()));
  }

 private:
  std::vector<c10::intrusive_ptr<CollectiveWork>> works_;
};

bool read_checks_setting() {
  const char* value = std::getenv("AXON_DISTRIBUTED_CHECKS");
  return value == nullptr || std::string(value) != "0";
}

}  // namespace

ProcessGroupAxon::ProcessGroupAxon(int rank, int size, std::chrono::milliseconds timeout,
                                   c10::intrusive_ptr<c10d::Backend> transport)
    : c10d::Backend(rank, size),
      transport_(std::move(transport)),
      timeout_ms_(timeout.count()),
      checks_enabled_(read_checks_setting()),
      runner_(std::make_unique<CollectiveRunner>()) {
  TORCH_CHECK_VALUE(transport_, "[axon] ProcessGroupAxon needs a transport backend");
  TORCH_CHECK_VALUE(transport_->getRank() == rank && transport_->getSize() == size,
                    "[axon] the transport's rank/size (", transport_->getRank(), "/", transport_->getSize(),
                    ") differ from the group's (", rank, "/", size, ")");
}

ProcessGroupAxon::~ProcessGroupAxon() { runner_.reset(); }

void ProcessGroupAxon::setTimeout(std::chrono::milliseconds timeout) {
  timeout_ms_ = timeout.count();
  transport_->setTimeout(timeout);
}

std::chrono::milliseconds ProcessGroupAxon::timeout_for(std::chrono::milliseconds requested) const {
  if (requested.count() > 0) return requested;
  return std::chrono::milliseconds(timeout_ms_.load());
}

const ProcessGroupAxon::DeviceStreams& ProcessGroupAxon::streams_of(c10::DeviceIndex device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = streams_.find(device);
  if (found == streams_.end()) {
    DeviceStreams streams{stream_from_pool(device, kCommunicationPriority),
                          stream_from_pool(device, kCommunicationPriority)};
    // Pools hand streams out round-robin; insist on two distinct ones.
    while (streams.completion == streams.issue) {
      streams.completion = stream_from_pool(device, kCommunicationPriority);
    }
    found = streams_.emplace(device, streams).first;
  }
  return found->second;
}

c10::Stream ProcessGroupAxon::issue_stream(c10::DeviceIndex device) { return streams_of(device).issue; }

c10::Stream ProcessGroupAxon::completion_stream(c10::DeviceIndex device) { return streams_of(device).completion; }

void ProcessGroupAxon::submit(std::unique_ptr<CollectiveJob> job, bool synchronous) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (coalescing_) {
      coalesced_.push_back(job->work);
      synchronous = false;
    }
  }
  if (synchronous && runner_->run_inline_if_idle(job)) return;
  runner_->enqueue(std::move(job));
}

void ProcessGroupAxon::startCoalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!coalescing_, "[axon] startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupAxon::endCoalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(coalescing_, "[axon] endCoalescing called without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<CoalescedWork>(getRank(), std::exchange(coalesced_, {}));
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupAxon::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                          const std::vector<int>& ranks,
                                                          const c10::intrusive_ptr<Options>& options) {
  // The transport splits with its own key prefix, so a Gloo backend of the
  // same group (cpu:gloo) splitting with the same store does not collide.
  auto transport_store = c10::make_intrusive<c10d::PrefixStore>("axon_transport", store);
  auto transport_split = transport_->split(transport_store, ranks, transport_->getBackendOptions());
  if (!transport_split) return nullptr;
  const auto timeout = options ? options->timeout : std::chrono::milliseconds(timeout_ms_.load());
  return c10::make_intrusive<ProcessGroupAxon>(transport_split->getRank(), transport_split->getSize(), timeout,
                                               transport_split);
}

void ProcessGroupAxon::setSequenceNumberForGroup() { transport_->setSequenceNumberForGroup(); }

uint64_t ProcessGroupAxon::getSequenceNumberForGroup() { return transport_->getSequenceNumberForGroup(); }

void ProcessGroupAxon::abort() { transport_->abort(); }

void ProcessGroupAxon::shutdown() { transport_->shutdown(); }

}  // namespace axon::distributed
