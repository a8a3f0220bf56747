// torch.profiler's device rows for axon: a Kineto activity profiler, registered
// for PrivateUse1, that turns the driver's activity records (axon/activity.h)
// into kernels, copies and sets on per-stream rows of each device.
//
// How a record meets the operator that launched it: while a session runs,
// Kineto pushes each host operator's correlation id on the operator's thread
// (pushCorrelationId); we hand the innermost one to the driver as the thread's
// tag, so every launch, copy and set carries it. At the end, Kineto's
// getLinkedActivity(tag) finds that operator, and PyTorch attaches the device
// activity to it: its device time, key_averages' device columns, the trace's
// links.

// The registry header is compiled only where Kineto is; the wheel has it.
#define USE_KINETO 1

#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <output_base.h>

#include <atomic>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "axon/activity.h"
#include "profiler/device_activity.h"

namespace axon {
namespace {

using libkineto::ActivityType;

std::atomic<bool> recording{false};

// The innermost operator's correlation id is the tag the driver stamps.
thread_local std::vector<std::uint64_t> correlation_stack;

void tag_thread_with_innermost() {
  axon_activity_set_correlation(correlation_stack.empty() ? 0 : correlation_stack.back());
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
    default:
      return ActivityType::GPU_MEMCPY;
  }
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
  void start() override {
    const axon_status status = axon_activity_start();
    if (status == AXON_SUCCESS) {
      started_ = true;
      recording.store(true, std::memory_order_relaxed);
      status_ = libkineto::TraceStatus::RECORDING;
    } else {
      errors_.push_back(std::string("axon: no device activity (") + axon_last_error_message() + ")");
      status_ = libkineto::TraceStatus::WARNING;
    }
  }

  void stop() override {
    if (!started_) return;
    recording.store(false, std::memory_order_relaxed);
    axon_activity_stop();
    started_ = false;
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t start_time, int64_t end_time) override {
    collect();
    span_ = std::make_unique<libkineto::TraceSpan>(start_time, end_time, "axon");
    for (const axon_activity_record& record : records_) {
      const libkineto::ITraceActivity* launcher =
          record.correlation != 0 ? linked_activity(static_cast<int32_t>(record.correlation)) : nullptr;
      activities_.emplace_back(*span_, kineto_type(record.kind), name_of(record, launcher));
      libkineto::GenericTraceActivity& activity = activities_.back();
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
      logger.handleGenericActivity(activity);
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
    correlation_stack.push_back(id);
    tag_thread_with_innermost();
  }

  void popCorrelationId() override {
    if (!correlation_stack.empty()) correlation_stack.pop_back();
    tag_thread_with_innermost();
  }

 private:
  // Takes the driver's records once; later calls find them here.
  void collect() {
    if (collected_ || started_) return;
    collected_ = true;
    axon_activity_record page[256];
    for (;;) {
      size_t count = 0;
      size_t dropped = 0;
      if (axon_activity_collect(page, 256, &count, &dropped) != AXON_SUCCESS) break;
      if (dropped != 0) errors_.push_back("axon: the driver dropped " + std::to_string(dropped) + " device activities");
      for (size_t index = 0; index < count; ++index) {
        records_.push_back(page[index]);
        devices_.insert(page[index].device);
        streams_.insert({page[index].device, page[index].stream_number});
      }
      if (count < 256) break;
    }
  }

  bool started_ = false;
  bool collected_ = false;
  std::vector<axon_activity_record> records_;
  std::set<int> devices_;
  std::set<std::pair<int, int>> streams_;
  std::vector<std::string> errors_;
  std::unique_ptr<libkineto::TraceSpan> span_;
  std::deque<libkineto::GenericTraceActivity> activities_;  // the logger keeps pointers: never moved
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
