// torch.profiler's device rows for axon: a Kineto activity profiler, registered
// for PrivateUse1, that turns the driver's activity records (axon/activity.h)
// into kernels, copies and sets on per-stream rows of each device.
//
// How a record meets the operator that launched it: while a session runs,
// Kineto pushes each host operator's correlation id on the operator's thread
// (pushCorrelationId); we hand the innermost one to the driver as the thread's
// tag, so every launch, copy and set carries it. At the end, Kineto's
// getLinkedActivity(tag) finds that operator, and PyTorch attaches the device
// activity to it: its device time, key_averages' device columns, and the
// operator's correlation id ("External id") on the activity in the trace.

// The registry header is compiled only where Kineto is; the wheel has it.
#define USE_KINETO 1

#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <c10/util/Exception.h>

#include "axon/activity.h"
#include "axon/runtime.h"
#include "profiler/device_activity.h"

namespace axon {
namespace {

using libkineto::ActivityType;

std::atomic<bool> recording{false};
// Sessions so far: a thread's correlation stack from an earlier session (an
// operator still open when that one stopped) is stale in the next.
std::atomic<std::uint64_t> session_number{0};

// The innermost operator's correlation id is the tag the driver stamps.
struct CorrelationStack {
  std::uint64_t session = 0;
  std::vector<std::uint64_t> ids;
};
thread_local CorrelationStack correlation_stack;

CorrelationStack& current_correlation_stack() {
  const std::uint64_t session = session_number.load(std::memory_order_relaxed);
  if (correlation_stack.session != session) correlation_stack = CorrelationStack{session, {}};
  return correlation_stack;
}

void tag_thread_with_innermost(const CorrelationStack& stack) {
  axon_activity_set_correlation(stack.ids.empty() ? 0 : stack.ids.back());
}

const std::set<ActivityType>& device_activity_types() {
  static const std::set<ActivityType> types{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                            ActivityType::GPU_MEMSET};
  return types;
}

ActivityType kineto_type(axon_activity_kind kind) {
  switch (kind) {
    case AXON_ACTIVITY_HOST_FUNCTION:
    case AXON_ACTIVITY_EXECUTABLE:
      return ActivityType::CONCURRENT_KERNEL;
    case AXON_ACTIVITY_SET:
      return ActivityType::GPU_MEMSET;
    case AXON_ACTIVITY_COPY_HOST_TO_DEVICE:
    case AXON_ACTIVITY_COPY_DEVICE_TO_HOST:
    case AXON_ACTIVITY_COPY_DEVICE_TO_DEVICE:
    case AXON_ACTIVITY_COPY_HOST_TO_HOST:
      return ActivityType::GPU_MEMCPY;
  }
  return ActivityType::CONCURRENT_KERNEL;  // a kind newer than this build: device work of some sort
}

// CUDA's names for copies and sets, so trace viewers and scripts that know
// them read ours.
std::string name_of(const axon_activity_record& record, const libkineto::ITraceActivity* launcher) {
  switch (record.kind) {
    case AXON_ACTIVITY_COPY_HOST_TO_DEVICE:
      return "Memcpy HtoD";
    case AXON_ACTIVITY_COPY_DEVICE_TO_HOST:
      return "Memcpy DtoH";
    case AXON_ACTIVITY_COPY_DEVICE_TO_DEVICE:
      return "Memcpy DtoD";
    case AXON_ACTIVITY_COPY_HOST_TO_HOST:
      return "Memcpy HtoH";
    case AXON_ACTIVITY_SET:
      return "Memset";
    default:
      break;
  }
  if (record.name[0] != '\0') return record.name;
  // Unlabelled work (launched while the flag was still off): say who launched it.
  return launcher != nullptr ? "kernel of " + launcher->name() : std::string("kernel");
}

class DeviceActivitySession : public libkineto::IActivityProfilerSession {
 public:
  ~DeviceActivitySession() override { stop(); }  // never leave the driver recording

  void start() override {
    session_number.fetch_add(1, std::memory_order_relaxed);
    const axon_status status = axon_activity_start();
    if (status == AXON_SUCCESS) {
      started_ = true;
      recording.store(true, std::memory_order_relaxed);
      status_ = libkineto::TraceStatus::RECORDING;
      return;
    }
    // Kineto never asks a session for its errors(): say it here, and in the
    // trace's metadata.
    problems_.push_back(std::string("no device activity: ") + axon_last_error_message());
    if (status == AXON_ERROR_NOT_SUPPORTED) {
      TORCH_WARN_ONCE("torch.profiler: the axon driver \"", axon_driver_name(),
                      "\" keeps no activity records, so the profile has no axon device rows");
    } else {
      TORCH_WARN("torch.profiler: ", problems_.back());
    }
    status_ = libkineto::TraceStatus::WARNING;
  }

  void stop() override {
    if (!started_) return;
    recording.store(false, std::memory_order_relaxed);
    axon_activity_stop();
    started_ = false;
    stopped_ = true;
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return problems_; }

  std::unordered_map<std::string, std::string> getMetadata() override {
    collect();
    if (problems_.empty()) return {};
    std::string joined;
    for (const std::string& problem : problems_) joined += (joined.empty() ? "" : "; ") + problem;
    // Kineto writes metadata values into the JSON trace as they are.
    for (char& c : joined) {
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '\'';
    }
    return {{"axon_profiler_problems", "\"" + joined + "\""}};
  }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t start_time, int64_t end_time) override {
    collect();
    // Activities point at their span; it lives as long as this session.
    span_ = std::make_unique<libkineto::TraceSpan>(start_time, end_time, "axon");
    for (const axon_activity_record& record : records_) {
      // Kineto's correlation ids are 32-bit (its getLinkedActivity takes an int32_t).
      const libkineto::ITraceActivity* launcher =
          record.correlation != 0 ? linked_activity(static_cast<int32_t>(record.correlation)) : nullptr;
      libkineto::GenericTraceActivity activity(*span_, kineto_type(record.kind), name_of(record, launcher));
      activity.startTime = record.start_ns;
      activity.endTime = record.end_ns;
      activity.id = static_cast<int32_t>(next_activity_id_++);
      activity.device = record.device;
      activity.resource = record.stream_number;
      activity.linked = launcher;
      // addMetadata would need fmt, which libtorch keeps to itself: every value goes quoted.
      activity.addMetadataQuoted("device", std::to_string(record.device));
      activity.addMetadataQuoted("stream", std::to_string(record.stream_number));
      activity.addMetadataQuoted("correlation", std::to_string(record.correlation));
      if (record.bytes != 0) activity.addMetadataQuoted("bytes", std::to_string(record.bytes));
      if (record.status != AXON_SUCCESS) activity.addMetadataQuoted("status", axon_status_name(record.status));
      logger.handleGenericActivity(activity);  // the logger keeps its own copy
    }
    status_ = libkineto::TraceStatus::READY;
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    collect();
    if (devices_.empty()) return nullptr;
    // Kineto takes one device per session; the rows of any other device still
    // show, under their number.
    const int device = *devices_.begin();
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{device, device, "axon " + std::to_string(device), "axon:" + std::to_string(device)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    collect();
    std::vector<libkineto::ResourceInfo> resources;
    for (const auto& [device, stream] : streams_) {
      resources.push_back(libkineto::ResourceInfo{
          stream, stream, device, stream == 0 ? std::string("default stream") : "stream " + std::to_string(stream)});
    }
    return resources;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

  void pushCorrelationId(uint64_t id) override {
    if (!started_) return;  // nothing is recording: no boundary call per operator
    CorrelationStack& stack = current_correlation_stack();
    stack.ids.push_back(id);
    tag_thread_with_innermost(stack);
  }

  void popCorrelationId() override {
    if (!started_) return;
    CorrelationStack& stack = current_correlation_stack();
    if (!stack.ids.empty()) stack.ids.pop_back();
    tag_thread_with_innermost(stack);
  }

 private:
  // Takes this session's records from the driver once, after it stopped
  // recording; later calls find them here. (Work still queued then is lost
  // to this profile, as on CUDA; the driver drops it from the next one.)
  void collect() {
    if (!stopped_ || collected_) return;
    collected_ = true;
    constexpr size_t kPage = 256;
    std::vector<axon_activity_record> page(kPage);
    for (;;) {
      size_t count = 0;
      size_t dropped = 0;
      if (axon_activity_collect(page.data(), sizeof(axon_activity_record), kPage, &count, &dropped) != AXON_SUCCESS) {
        problems_.push_back(std::string("collecting device activity failed: ") + axon_last_error_message());
        TORCH_WARN("torch.profiler: ", problems_.back());
        break;
      }
      if (dropped != 0) {
        problems_.push_back("the driver dropped " + std::to_string(dropped) + " device activities (too many waiting)");
        TORCH_WARN("torch.profiler: ", problems_.back());
      }
      for (size_t index = 0; index < count; ++index) {
        records_.push_back(page[index]);
        devices_.insert(page[index].device);
        streams_.insert({page[index].device, page[index].stream_number});
      }
      if (count < kPage) break;
    }
  }

  bool started_ = false;
  bool stopped_ = false;  // recorded, then stopped: there are records to collect
  bool collected_ = false;
  std::vector<axon_activity_record> records_;
  std::set<int> devices_;
  std::set<std::pair<int, int>> streams_;
  std::vector<std::string> problems_;
  std::unique_ptr<libkineto::TraceSpan> span_;
  std::int64_t next_activity_id_ = 1;
};

class DeviceActivityProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return device_activity_types(); }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& /*config*/) override {
    for (ActivityType type : activity_types) {
      if (device_activity_types().count(type) != 0) return std::make_unique<DeviceActivitySession>();
    }
    return nullptr;  // a CPU-only profile: leave the device alone
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  std::string name_{"axon"};
};

REGISTER_PRIVATEUSE1_PROFILER(DeviceActivityProfiler);

}  // namespace

bool device_activity_recording() { return recording.load(std::memory_order_relaxed); }

}  // namespace axon
