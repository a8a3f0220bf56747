#include "core/pinned_memory_allocator.h"

#include "core/check.h"
#include "core/device.h"
#include "core/stream.h"

namespace axon {
namespace {

// Owns one driver event; movable so the ATen pool can keep it in containers.
class HostUseEvent {
 public:
  explicit HostUseEvent(const c10::Stream& stream) {
    AXON_CHECK(axon_event_create(AXON_EVENT_DEFAULT, &event_), "creating a pinned-memory event");
    const axon_status status = axon_event_record(event_, stream_handle(stream));
    if (status != AXON_SUCCESS) {
      axon_event_destroy(event_);
      event_ = nullptr;
      throw_status(status, "recording a pinned-memory event");
    }
  }
  HostUseEvent(HostUseEvent&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  HostUseEvent& operator=(HostUseEvent&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  HostUseEvent(const HostUseEvent&) = delete;
  HostUseEvent& operator=(const HostUseEvent&) = delete;
  ~HostUseEvent() {
    if (event_ != nullptr) {
      axon_event_destroy(event_);
    }
  }

  bool completed() const { return event_ == nullptr || axon_event_query(event_) != AXON_ERROR_NOT_READY; }

 private:
  axon_event event_ = nullptr;
};

struct PinnedHostAllocatorImpl final : public at::CachingHostAllocatorImpl<c10::Stream, HostUseEvent> {
 private:
  void allocate_host_memory(size_t size, void** ptr) override {
    AXON_CHECK(axon_host_allocate(size, ptr), "allocating pinned host memory");
  }

  void free_block(at::HostBlock<c10::Stream>* block) override { axon_host_free(block->ptr_); }

  void record_stream(std::optional<std::vector<HostUseEvent>>& events, c10::Stream stream) override {
    events->emplace_back(stream);
  }

  bool query_event(HostUseEvent& event) override { return event.completed(); }

  c10::Stream get_current_stream() const override { return current_stream(current_device()); }

  bool stream_is_capturing(c10::Stream /*stream*/) const override {
    return false;  // axon has no graph capture
  }
};

void free_pinned(void* context);

DECLARE_HOST_ALLOCATOR(PinnedHostAllocator, PinnedHostAllocatorImpl, free_pinned, pinned_host_allocator)

}  // namespace

REGISTER_HOST_ALLOCATOR(c10::DeviceType::PrivateUse1, &pinned_host_allocator)

at::HostAllocator* pinned_memory_allocator() { return &pinned_host_allocator; }

void pinned_memory_record_use(const c10::DataPtr& data_ptr, const c10::Stream& stream) {
  pinned_host_allocator.record_event(data_ptr.get(), data_ptr.get_context(), stream);
}

}  // namespace axon
