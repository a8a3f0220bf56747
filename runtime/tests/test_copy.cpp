// Copies and sets between device, pinned and pageable memory.

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "axon_test_support.h"

using axon_test::DeviceBuffer;
using axon_test::Gate;
using axon_test::require;
using axon_test::ScopedStream;

namespace {

constexpr size_t kBytes = 64 * 1024 + 17;  // not a multiple of anything convenient

std::vector<unsigned char> pattern(unsigned seed) {
  std::vector<unsigned char> bytes(kBytes);
  for (size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<unsigned char>(i * 31 + seed);
  return bytes;
}

class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) { require(axon_host_allocate(bytes, &pointer_), "axon_host_allocate"); }
  ~PinnedBuffer() { EXPECT_EQ(axon_host_free(pointer_), AXON_SUCCESS); }
  unsigned char* get() const { return static_cast<unsigned char*>(pointer_); }

 private:
  void* pointer_ = nullptr;
};

}  // namespace

TEST(Copy, PageableToDeviceToPageable) {
  ScopedStream stream(0);
  DeviceBuffer device(0, kBytes);
  const auto source = pattern(1);
  std::vector<unsigned char> result(kBytes);
  ASSERT_AXON_OK(axon_memory_copy_async(device.get(), source.data(), kBytes, stream));
  ASSERT_AXON_OK(axon_memory_copy_async(result.data(), device.get(), kBytes, stream));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(result, source);
}

TEST(Copy, PinnedToDeviceToPinned) {
  ScopedStream stream(0);
  DeviceBuffer device(0, kBytes);
  PinnedBuffer source(kBytes);
  PinnedBuffer result(kBytes);
  const auto expected = pattern(2);
  std::memcpy(source.get(), expected.data(), kBytes);
  ASSERT_AXON_OK(axon_memory_copy_async(device.get(), source.get(), kBytes, stream));
  ASSERT_AXON_OK(axon_memory_copy_async(result.get(), device.get(), kBytes, stream));
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(std::memcmp(result.get(), expected.data(), kBytes), 0);
}

TEST(Copy, DeviceToDeviceOnOneDeviceAndAcrossDevices) {
  const int last_device = axon_test::device_count() - 1;
  DeviceBuffer first(0, kBytes);
  DeviceBuffer same_device(0, kBytes);
  DeviceBuffer other_device(last_device, kBytes);
  ScopedStream stream(last_device);  // any device's stream may copy any memory
  const auto expected = pattern(3);
  std::vector<unsigned char> result(kBytes);
  ASSERT_AXON_OK(axon_memory_copy_async(first.get(), expected.data(), kBytes, stream));
  ASSERT_AXON_OK(axon_memory_copy_async(same_device.get(), first.get(), kBytes, stream));
  ASSERT_AXON_OK(axon_memory_copy_async(other_device.get(), same_device.get(), kBytes, stream));
  ASSERT_AXON_OK(axon_memory_copy(result.data(), other_device.get(), kBytes, stream));
  EXPECT_EQ(result, expected);
}

TEST(Copy, HostToHostAndInteriorRanges) {
  ScopedStream stream(0);
  PinnedBuffer pinned(kBytes);
  const auto expected = pattern(4);
  std::vector<unsigned char> result(kBytes);
  ASSERT_AXON_OK(axon_memory_copy(pinned.get(), expected.data(), kBytes, stream));
  ASSERT_AXON_OK(axon_memory_copy(result.data(), pinned.get(), kBytes, stream));
  EXPECT_EQ(result, expected);

  DeviceBuffer device(0, 1024);
  const unsigned char marker[4] = {9, 8, 7, 6};
  ASSERT_AXON_OK(axon_memory_set_async(device.get(), 0, 1024, stream));
  ASSERT_AXON_OK(axon_memory_copy_async(device.as<unsigned char>() + 1020, marker, 4, stream));
  unsigned char tail[8] = {};
  ASSERT_AXON_OK(axon_memory_copy(tail, device.as<unsigned char>() + 1016, 8, stream));
  const unsigned char expected_tail[8] = {0, 0, 0, 0, 9, 8, 7, 6};
  EXPECT_EQ(std::memcmp(tail, expected_tail, 8), 0);
}

TEST(Copy, PageableSourceIsStagedAtCallTime) {
  ScopedStream stream(0);
  DeviceBuffer device(0, sizeof(int));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  int value = 1;
  ASSERT_AXON_OK(axon_memory_copy_async(device.get(), &value, sizeof value, stream));
  value = 2;  // the queued copy must not see this
  gate.open();
  int result = 0;
  ASSERT_AXON_OK(axon_memory_copy(&result, device.get(), sizeof result, stream));
  EXPECT_EQ(result, 1);
}

TEST(Copy, CopyToHostCompletesOnlyWhenTheStreamReachesIt) {
  ScopedStream stream(0);
  DeviceBuffer device(0, sizeof(int));
  const int stored = 77;
  ASSERT_AXON_OK(axon_memory_copy(device.get(), &stored, sizeof stored, stream));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream));
  int result = 0;
  ASSERT_AXON_OK(axon_memory_copy_async(&result, device.get(), sizeof result, stream));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(axon_stream_query(stream), AXON_ERROR_NOT_READY);
  EXPECT_EQ(result, 0);
  gate.open();
  ASSERT_AXON_OK(axon_stream_synchronize(stream));
  EXPECT_EQ(result, 77);
}

TEST(Copy, SetFillsDeviceMemory) {
  ScopedStream stream(0);
  DeviceBuffer device(0, 4096);
  ASSERT_AXON_OK(axon_memory_set_async(device.get(), 0xAB, 4096, stream));
  ASSERT_AXON_OK(axon_memory_set_async(device.as<char>() + 100, 0x100 + 0x11, 10, stream));  // low byte only
  std::vector<unsigned char> result(4096);
  ASSERT_AXON_OK(axon_memory_copy(result.data(), device.get(), 4096, stream));
  for (size_t i = 0; i < result.size(); ++i) {
    ASSERT_EQ(result[i], (i >= 100 && i < 110) ? 0x11 : 0xAB) << "at byte " << i;
  }
}

TEST(Copy, InvalidArgumentsAreRejected) {
  ScopedStream stream(0);
  DeviceBuffer device(0, 1024);
  std::vector<unsigned char> host(4096);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_copy_async(nullptr, host.data(), 16, stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_copy_async(device.get(), nullptr, 16, stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_memory_copy_async(device.get(), host.data(), 16, nullptr));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_memory_copy_async(device.get(), host.data(), 0, nullptr));
  EXPECT_AXON_OK(axon_memory_copy_async(device.get(), host.data(), 0, stream));

  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_copy_async(device.get(), host.data(), 2048, stream));
  EXPECT_NE(std::string(axon_last_error_message()).find("overruns"), std::string::npos) << axon_last_error_message();
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_memory_copy_async(host.data(), device.as<char>() + 1000, 100, stream));

  void* freed = nullptr;
  ASSERT_AXON_OK(axon_memory_allocate(0, 256, &freed));
  ASSERT_AXON_OK(axon_memory_free(freed));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_copy_async(freed, host.data(), 16, stream));

  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_POINTER, axon_memory_set_async(host.data(), 0, 16, stream));
  EXPECT_NE(std::string(axon_last_error_message()).find("expected device memory"), std::string::npos);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_set_async(nullptr, 0, 16, stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_memory_set_async(device.get(), 0, 2048, stream));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE, axon_memory_set_async(device.get(), 0, 16, nullptr));
  EXPECT_AXON_OK(axon_stream_synchronize(stream));
}
