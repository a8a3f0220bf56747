#include "host_execution/worker_warnings.h"

#include <mutex>
#include <string>
#include <unordered_set>

namespace axon {
namespace {

// Messages, not warnings: a kernel's run on the worker builds its own
// c10::Warning with the same text. Bounded: a program that warns with ever new
// texts refills it.
constexpr size_t kMaxMessages = 1024;

std::mutex messages_mutex;
std::unordered_set<std::string>& given_messages() {
  static auto* messages = new std::unordered_set<std::string>();  // outlives worker threads at exit
  return *messages;
}

class WorkerWarningHandler final : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    {
      std::lock_guard<std::mutex> lock(messages_mutex);
      if (given_messages().count(warning.msg()) != 0) return;
    }
    base_->process(warning);
  }

 private:
  c10::WarningHandler* base_ = c10::WarningUtils::get_warning_handler();  // the thread's handler before this one
};

}  // namespace

void note_warning_given_at_call(const c10::Warning& warning) {
  std::lock_guard<std::mutex> lock(messages_mutex);
  auto& messages = given_messages();
  if (messages.size() >= kMaxMessages) messages.clear();
  messages.insert(warning.msg());
}

void install_worker_warning_handler() {
  // Per thread: c10's warning handler is thread-local. Created on the worker,
  // where the handler in place is the base one, and kept for the thread's life.
  thread_local WorkerWarningHandler handler;
  c10::WarningUtils::set_warning_handler(&handler);
}

}  // namespace axon
