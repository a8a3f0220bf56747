#include "core/stream_checks.h"

#include <cstdint>
#include <cstdio>
#include <utility>

#include "axon/memory.h"
#include "axon/stream.h"
#include "core/check.h"
#include "core/stream.h"

namespace axon {
namespace {

// What one queued report owns until the driver releases it: the host copy of
// the table and the checks it is read against.
struct PendingReport {
  std::vector<int64_t> table;
  StreamChecks checks;
  bool ran = false;  // set by the host function, once the copy into `table` has landed
};

std::string with_value(std::string message, int64_t value) {
  static const std::string placeholder = "{value}";
  const std::string text = std::to_string(value);
  for (size_t at = message.find(placeholder); at != std::string::npos;
       at = message.find(placeholder, at + text.size())) {
    message.replace(at, placeholder.size(), text);
  }
  return message;
}

// Runs on the device once the copy has landed; only reads host memory.
axon_status run_report(void* data, char* message) {
  auto* report = static_cast<PendingReport*>(data);
  report->ran = true;
  const std::vector<StreamCheck>& checks = *report->checks;
  for (size_t check = 0; check < checks.size(); ++check) {
    if (report->table[2 * check] < 0) continue;
    const std::string text = with_value(checks[check].message, report->table[2 * check + 1]);
    std::snprintf(message, AXON_TASK_MESSAGE_CAPACITY, "%s", text.c_str());
    return checks[check].status;
  }
  return AXON_SUCCESS;
}

// A report whose host function never ran (its launch failed, or shutdown
// discarded it) may still have its copy queued, which would write into freed
// memory: such a report is left allocated (16 bytes per check, only on those
// failure paths).
void release_report(void* data) {
  auto* report = static_cast<PendingReport*>(data);
  if (report->ran) delete report;
}

axon_status failure_status(const std::string& exception_name) {
  if (exception_name == "IndexError") return AXON_ERROR_TASK_OUT_OF_RANGE;
  if (exception_name == "ValueError") return AXON_ERROR_TASK_INVALID_ARGUMENT;
  if (exception_name == "TypeError") return AXON_ERROR_TASK_WRONG_TYPE;
  if (exception_name == "NotImplementedError") return AXON_ERROR_TASK_UNSUPPORTED;
  if (exception_name == "LinAlgError") return AXON_ERROR_TASK_NUMERICAL;
  return AXON_ERROR_TASK_FAILED;
}

}  // namespace

void report_checks_in_stream_order(const at::Tensor& table, const StreamChecks& checks) {
  const int64_t count = static_cast<int64_t>(checks->size());
  TORCH_CHECK(table.is_privateuseone() && table.scalar_type() == at::kLong && table.is_contiguous() &&
                  table.dim() == 2 && table.size(0) == count && table.size(1) == 2,
              "[axon] a check table must be a contiguous [", count, ", 2] int64 axon tensor, got ", table.sizes(), " ",
              table.scalar_type(), " on ", table.device());
  axon_stream stream = current_stream_handle(table.device().index());
  auto report = std::make_unique<PendingReport>();
  report->table.resize(static_cast<size_t>(2 * count));
  report->checks = checks;
  // To pageable host memory: complete once the stream reaches it, which the host function behind it waits for.
  AXON_CHECK(axon_memory_copy_async(report->table.data(), table.data_ptr(), table.nbytes(), stream),
             "copying a run-time check table to the host");
  // The driver owns the report from here, and releases it even when the launch fails.
  AXON_CHECK(axon_stream_launch_host_function(stream, axon_host_function{run_report, release_report, report.release()}),
             "queuing the report of run-time checks");
}

StreamChecks stream_checks(const std::vector<std::pair<std::string, std::string>>& exception_and_message) {
  auto checks = std::make_shared<std::vector<StreamCheck>>();
  for (const auto& [exception_name, message] : exception_and_message) {
    checks->push_back(StreamCheck{failure_status(exception_name), message});
  }
  return checks;
}

}  // namespace axon
