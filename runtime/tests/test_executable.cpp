// Executables: formats, loading, launches in stream order with bindings and
// constants, failures. Drivers without executables (capability 0) skip these.
//
// The image is the "host-shared-object" test kernel library
// (kernels/test_kernels.cpp); a driver that loads another format would test
// its own programs the same way.

#include <fstream>
#include <iterator>
#include <vector>

#include "axon/formats/host_shared_object.h"
#include "axon/formats/stablehlo.h"
#include "axon_test_support.h"

using axon_test::DeviceBuffer;
using axon_test::Gate;
using axon_test::ScopedStream;

namespace {

std::vector<char> kernel_image() {
  std::ifstream file(AXON_TEST_KERNELS_PATH, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// Skips the test unless device 0 loads host-shared-object executables.
// Skips the test unless device 0 loads executables in `format`.
#define REQUIRE_FORMAT(format)                                                \
  do {                                                                        \
    int supported_ = 0;                                                       \
    ASSERT_AXON_OK(axon_executable_format_supported(0, format, &supported_)); \
    if (!supported_) GTEST_SKIP() << "the driver does not load " << (format); \
  } while (0)
#define REQUIRE_HOST_EXECUTABLES() REQUIRE_FORMAT(AXON_FORMAT_HOST_SHARED_OBJECT)

class LoadedKernels {
 public:
  explicit LoadedKernels(int device) {
    const std::vector<char> image = kernel_image();
    axon_test::require(
        axon_executable_load(device, AXON_FORMAT_HOST_SHARED_OBJECT, image.data(), image.size(), &executable_),
        "axon_executable_load");
  }
  ~LoadedKernels() {
    if (executable_ != nullptr) EXPECT_AXON_OK(axon_executable_destroy(executable_));
  }
  axon_executable get() const { return executable_; }
  void forget() { executable_ = nullptr; }

 private:
  axon_executable executable_ = nullptr;
};

constexpr size_t kCount = 1000;

}  // namespace

TEST(Executable, CapabilityAnswersAreZeroOrOne) {
  for (int capability = 0; capability <= 8; ++capability) {
    int value = 7;
    ASSERT_AXON_OK(axon_device_get_capability(0, static_cast<axon_capability>(capability), &value));
    EXPECT_TRUE(value == 0 || value == 1) << "capability " << capability;
    if (capability == 0 || capability > AXON_CAPABILITY_EXECUTABLES) {
      EXPECT_EQ(value, 0);  // unknown ones
    }
  }
  int supported = 7;
  ASSERT_AXON_OK(axon_executable_format_supported(0, "no-such-format", &supported));
  EXPECT_EQ(supported, 0);
}

TEST(Executable, LaunchRunsInStreamOrderWithBindingsAndConstants) {
  REQUIRE_HOST_EXECUTABLES();
  LoadedKernels kernels(0);
  ScopedStream stream(0);
  DeviceBuffer a(0, kCount * sizeof(float)), b(0, kCount * sizeof(float)), out(0, kCount * sizeof(float));
  std::vector<float> a_values(kCount), b_values(kCount), result(kCount, -1.0f);
  for (size_t i = 0; i < kCount; ++i) {
    a_values[i] = static_cast<float>(i);
    b_values[i] = 0.5f;
  }
  ASSERT_AXON_OK(axon_memory_copy(a.get(), a_values.data(), kCount * sizeof(float), stream.get()));
  ASSERT_AXON_OK(axon_memory_copy(b.get(), b_values.data(), kCount * sizeof(float), stream.get()));
  ASSERT_AXON_OK(axon_memory_set_async(out.get(), 0, kCount * sizeof(float), stream.get()));

  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream.get()));
  const axon_binding bindings[] = {
      {a.get(), kCount * sizeof(float)}, {b.get(), kCount * sizeof(float)}, {out.get(), kCount * sizeof(float)}};
  const float scale = 3.0f;
  ASSERT_AXON_OK(
      axon_stream_launch_executable(stream.get(), kernels.get(), "scaled_add", bindings, 3, &scale, sizeof(scale)));
  EXPECT_AXON_STATUS(AXON_ERROR_NOT_READY, axon_stream_query(stream.get()));  // queued behind the gate
  gate.open();
  ASSERT_AXON_OK(axon_memory_copy(result.data(), out.get(), kCount * sizeof(float), stream.get()));
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(result[i], 3.0f * static_cast<float>(i) + 0.5f) << i;
}

TEST(Executable, DestroyWhileLaunchesAreQueuedKeepsTheProgram) {
  REQUIRE_HOST_EXECUTABLES();
  LoadedKernels kernels(0);
  ScopedStream stream(0);
  DeviceBuffer a(0, sizeof(float)), out(0, sizeof(float));
  const float one = 1.0f;
  ASSERT_AXON_OK(axon_memory_copy(a.get(), &one, sizeof(one), stream.get()));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream.get()));
  const axon_binding bindings[] = {{a.get(), sizeof(float)}, {a.get(), sizeof(float)}, {out.get(), sizeof(float)}};
  const float scale = 2.0f;
  ASSERT_AXON_OK(
      axon_stream_launch_executable(stream.get(), kernels.get(), "scaled_add", bindings, 3, &scale, sizeof(scale)));
  ASSERT_AXON_OK(axon_executable_destroy(kernels.get()));
  kernels.forget();
  gate.open();
  float result = 0;
  ASSERT_AXON_OK(axon_memory_copy(&result, out.get(), sizeof(result), stream.get()));
  EXPECT_EQ(result, 3.0f);
}

TEST(Executable, ArgumentErrorsAreReportedAtTheCall) {
  REQUIRE_HOST_EXECUTABLES();
  const char not_elf[] = "definitely not a shared object";
  axon_executable executable = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_executable_load(0, AXON_FORMAT_HOST_SHARED_OBJECT, not_elf, sizeof(not_elf), &executable));
  EXPECT_EQ(executable, nullptr);
  EXPECT_AXON_STATUS(AXON_ERROR_NOT_SUPPORTED, axon_executable_load(0, "no-such-format", not_elf, 4, &executable));

  LoadedKernels kernels(0);
  ScopedStream stream(0);
  DeviceBuffer buffer(0, 16);
  float host[4] = {};
  const axon_binding device_binding[] = {{buffer.get(), 16}};
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_launch_executable(stream.get(), kernels.get(), "missing",
                                                                             device_binding, 1, nullptr, 0));
  const axon_binding host_binding[] = {{host, sizeof(host)}};
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_stream_launch_executable(stream.get(), kernels.get(), "scaled_add",
                                                                             host_binding, 1, nullptr, 0));
  const axon_binding overrun[] = {{buffer.get(), size_t{1} << 20}};  // past the allocation (and its granule)
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_stream_launch_executable(stream.get(), kernels.get(), "scaled_add", overrun, 1, nullptr, 0));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_HANDLE,
                     axon_stream_launch_executable(stream.get(), nullptr, "scaled_add", nullptr, 0, nullptr, 0));
  if (axon_test::device_count() > 1) {
    ScopedStream other(1);
    EXPECT_AXON_STATUS(
        AXON_ERROR_INVALID_HANDLE,
        axon_stream_launch_executable(other.get(), kernels.get(), "always_fails", nullptr, 0, nullptr, 0));
  }
  ASSERT_AXON_OK(axon_stream_synchronize(stream.get()));  // nothing was queued by the refused launches
}

TEST(Executable, AFailingProgramFailsLikeAnyDeviceWork) {
  REQUIRE_HOST_EXECUTABLES();
  LoadedKernels kernels(0);
  ScopedStream stream(0);
  ASSERT_AXON_OK(axon_stream_launch_executable(stream.get(), kernels.get(), "always_fails", nullptr, 0, nullptr, 0));
  EXPECT_AXON_STATUS(AXON_ERROR_TASK_FAILED, axon_stream_synchronize(stream.get()));
  EXPECT_TRUE(axon_test::contains(axon_last_error_message(), "always_fails failed on purpose"))
      << axon_last_error_message();
  ASSERT_AXON_OK(axon_stream_synchronize(stream.get()));  // reported once
}

// ---- "stablehlo-mlir" (drivers that load it; the emulated one with AXON_PJRT_CPU_PLUGIN set) ----

namespace {

constexpr char kMultiplyAdd[] = R"(module @multiply_add {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<i32>) {
    %product = stablehlo.multiply %a, %b : tensor<4xf32>
    %sum = stablehlo.add %product, %a : tensor<4xf32>
    %seven = stablehlo.constant dense<7> : tensor<i32>
    return %sum, %seven : tensor<4xf32>, tensor<i32>
  }
})";

#define REQUIRE_STABLEHLO() REQUIRE_FORMAT(AXON_FORMAT_STABLEHLO)

}  // namespace

TEST(Executable, StablehloRunsInStreamOrderAndWritesResultsIntoTheirBindings) {
  REQUIRE_STABLEHLO();
  axon_executable executable = nullptr;
  ASSERT_AXON_OK(axon_executable_load(0, AXON_FORMAT_STABLEHLO, kMultiplyAdd, sizeof(kMultiplyAdd) - 1, &executable));
  ScopedStream stream(0);
  DeviceBuffer a(0, 16), b(0, 16), sum(0, 16), seven(0, 4);
  const float a_values[4] = {1, 2, 3, 4}, b_values[4] = {10, 20, 30, 40};
  ASSERT_AXON_OK(axon_memory_copy(a.get(), a_values, 16, stream.get()));
  ASSERT_AXON_OK(axon_memory_copy(b.get(), b_values, 16, stream.get()));
  Gate gate;
  ASSERT_AXON_OK(gate.hold(stream.get()));
  const axon_binding bindings[] = {{a.get(), 16}, {b.get(), 16}, {sum.get(), 16}, {seven.get(), 4}};
  ASSERT_AXON_OK(axon_stream_launch_executable(stream.get(), executable, "main", bindings, 4, nullptr, 0));
  ASSERT_AXON_OK(axon_executable_destroy(executable));  // the queued launch keeps the program
  EXPECT_AXON_STATUS(AXON_ERROR_NOT_READY, axon_stream_query(stream.get()));
  gate.open();
  float result[4] = {};
  int32_t constant = 0;
  ASSERT_AXON_OK(axon_memory_copy(result, sum.get(), 16, stream.get()));
  ASSERT_AXON_OK(axon_memory_copy(&constant, seven.get(), 4, stream.get()));
  EXPECT_EQ(result[0], 11.0f);
  EXPECT_EQ(result[3], 164.0f);
  EXPECT_EQ(constant, 7);
}

// The emulated driver compiles results in place (XLA writes each result into
// its binding, which the program takes as an aliased argument); a binding XLA
// cannot alias (not 64-byte aligned), a result that is an argument passed
// through, an empty result and a program without arguments must still land.
TEST(Executable, StablehloResultsLandInAlignedAndUnalignedBindingsAlike) {
  REQUIRE_STABLEHLO();
  constexpr char kPassThrough[] = R"(module @pass_through {
  func.func public @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<0xf32>) {
    %twice = stablehlo.add %a, %a : tensor<4xf32>
    %empty = stablehlo.constant dense<> : tensor<0xf32>
    return %a, %twice, %empty : tensor<4xf32>, tensor<4xf32>, tensor<0xf32>
  }
})";
  constexpr char kNoArguments[] = R"(module @no_arguments {
  func.func public @main() -> tensor<2xi64> {
    %c = stablehlo.constant dense<[5, -6]> : tensor<2xi64>
    return %c : tensor<2xi64>
  }
})";
  ScopedStream stream(0);
  DeviceBuffer a(0, 16), out(0, 64 + 20), empty(0, 64);
  const float a_values[4] = {1, 2, 3, 4};
  ASSERT_AXON_OK(axon_memory_copy(a.get(), a_values, 16, stream.get()));
  char* base = static_cast<char*>(out.get());
  for (const std::size_t offset : {std::size_t{0}, std::size_t{4}}) {  // aligned, then not
    axon_executable executable = nullptr;
    ASSERT_AXON_OK(axon_executable_load(0, AXON_FORMAT_STABLEHLO, kPassThrough, sizeof(kPassThrough) - 1, &executable));
    const axon_binding bindings[] = {{a.get(), 16}, {base + offset, 16}, {base + 32 + offset, 16}, {empty.get(), 0}};
    ASSERT_AXON_OK(axon_stream_launch_executable(stream.get(), executable, "main", bindings, 4, nullptr, 0));
    float passed[4] = {}, twice[4] = {};
    ASSERT_AXON_OK(axon_memory_copy(passed, base + offset, 16, stream.get()));
    ASSERT_AXON_OK(axon_memory_copy(twice, base + 32 + offset, 16, stream.get()));
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(passed[i], a_values[i]) << "offset " << offset;
      EXPECT_EQ(twice[i], 2 * a_values[i]) << "offset " << offset;
    }
    ASSERT_AXON_OK(axon_executable_destroy(executable));
  }
  axon_executable constant = nullptr;
  ASSERT_AXON_OK(axon_executable_load(0, AXON_FORMAT_STABLEHLO, kNoArguments, sizeof(kNoArguments) - 1, &constant));
  const axon_binding result[] = {{base + 8, 16}};
  ASSERT_AXON_OK(axon_stream_launch_executable(stream.get(), constant, "main", result, 1, nullptr, 0));
  int64_t values[2] = {};
  ASSERT_AXON_OK(axon_memory_copy(values, base + 8, 16, stream.get()));
  EXPECT_EQ(values[0], 5);
  EXPECT_EQ(values[1], -6);
  ASSERT_AXON_OK(axon_executable_destroy(constant));
}

// A result bound to its own argument's memory (an in-place update) reads the
// argument as it was: here a reversal, which a result written element by
// element over the argument it is still reading would get wrong.
TEST(Executable, StablehloResultBoundOverItsArgumentReadsTheArgumentFirst) {
  REQUIRE_STABLEHLO();
  constexpr char kReverse[] = R"(module @reverse {
  func.func public @main(%a: tensor<256xf32>) -> tensor<256xf32> {
    %r = stablehlo.reverse %a, dims = [0] : tensor<256xf32>
    return %r : tensor<256xf32>
  }
})";
  axon_executable executable = nullptr;
  ASSERT_AXON_OK(axon_executable_load(0, AXON_FORMAT_STABLEHLO, kReverse, sizeof(kReverse) - 1, &executable));
  ScopedStream stream(0);
  DeviceBuffer a(0, 1024);
  std::vector<float> values(256);
  for (int i = 0; i < 256; ++i) values[i] = static_cast<float>(i);
  ASSERT_AXON_OK(axon_memory_copy(a.get(), values.data(), 1024, stream.get()));
  const axon_binding bindings[] = {{a.get(), 1024}, {a.get(), 1024}};
  ASSERT_AXON_OK(axon_stream_launch_executable(stream.get(), executable, "main", bindings, 2, nullptr, 0));
  ASSERT_AXON_OK(axon_memory_copy(values.data(), a.get(), 1024, stream.get()));
  for (int i = 0; i < 256; ++i) ASSERT_EQ(values[i], static_cast<float>(255 - i)) << i;
  ASSERT_AXON_OK(axon_executable_destroy(executable));
}

TEST(Executable, StablehloRunsOnEveryDeviceItIsLoadedFor) {
  REQUIRE_STABLEHLO();
  for (int device = 0; device < axon_test::device_count(); ++device) {
    axon_executable executable = nullptr;
    ASSERT_AXON_OK(
        axon_executable_load(device, AXON_FORMAT_STABLEHLO, kMultiplyAdd, sizeof(kMultiplyAdd) - 1, &executable));
    ScopedStream stream(device);
    DeviceBuffer a(device, 16), b(device, 16), sum(device, 16), seven(device, 4);
    const float a_values[4] = {1, 2, 3, static_cast<float>(device)}, b_values[4] = {10, 20, 30, 40};
    ASSERT_AXON_OK(axon_memory_copy(a.get(), a_values, 16, stream.get()));
    ASSERT_AXON_OK(axon_memory_copy(b.get(), b_values, 16, stream.get()));
    const axon_binding bindings[] = {{a.get(), 16}, {b.get(), 16}, {sum.get(), 16}, {seven.get(), 4}};
    ASSERT_AXON_OK(axon_stream_launch_executable(stream.get(), executable, "main", bindings, 4, nullptr, 0));
    float result[4] = {};
    ASSERT_AXON_OK(axon_memory_copy(result, sum.get(), 16, stream.get()));
    EXPECT_EQ(result[3], 41.0f * static_cast<float>(device)) << "device " << device;
    ASSERT_AXON_OK(axon_executable_destroy(executable));
  }
}

TEST(Executable, StablehloRefusalsAreReportedAtTheCall) {
  REQUIRE_STABLEHLO();
  const char broken[] =
      "module { func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> { %x = stablehlo.bogus %a "
      ": tensor<4xf32> return %x : tensor<4xf32> } }";
  axon_executable executable = nullptr;
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_executable_load(0, AXON_FORMAT_STABLEHLO, broken, sizeof(broken) - 1, &executable));
  EXPECT_TRUE(axon_test::contains(axon_last_error_message(), "bogus")) << axon_last_error_message();
  ASSERT_AXON_OK(axon_executable_load(0, AXON_FORMAT_STABLEHLO, kMultiplyAdd, sizeof(kMultiplyAdd) - 1, &executable));
  ScopedStream stream(0);
  DeviceBuffer buffer(0, 16);
  const axon_binding too_few[] = {{buffer.get(), 16}};
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_stream_launch_executable(stream.get(), executable, "main", too_few, 1, nullptr, 0));
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE,
                     axon_stream_launch_executable(stream.get(), executable, "other", too_few, 1, nullptr, 0));
  ASSERT_AXON_OK(axon_executable_destroy(executable));
}

TEST(Executable, AStablehloExecutableSerializesToAnImageThatLoadsWithoutCompiling) {
  REQUIRE_STABLEHLO();
  axon_executable compiled = nullptr;
  ASSERT_AXON_OK(axon_executable_load(0, AXON_FORMAT_STABLEHLO, kMultiplyAdd, sizeof(kMultiplyAdd) - 1, &compiled));
  const char* format = nullptr;
  size_t bytes = 0;
  ASSERT_AXON_OK(axon_executable_serialize(compiled, &format, nullptr, 0, &bytes));
  ASSERT_NE(format, nullptr);
  ASSERT_GT(bytes, 0u);
  std::vector<char> image(bytes);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_executable_serialize(compiled, &format, image.data(), 1, &bytes));
  ASSERT_AXON_OK(axon_executable_serialize(compiled, &format, image.data(), image.size(), &bytes));
  ASSERT_AXON_OK(axon_executable_destroy(compiled));
  int supported = 0;
  ASSERT_AXON_OK(axon_executable_format_supported(0, format, &supported));
  EXPECT_EQ(supported, 1) << format;

  axon_executable loaded = nullptr;
  ASSERT_AXON_OK(axon_executable_load(0, format, image.data(), image.size(), &loaded));
  ScopedStream stream(0);
  DeviceBuffer a(0, 16), b(0, 16), sum(0, 16), seven(0, 4);
  const float a_values[4] = {1, 2, 3, 4}, b_values[4] = {10, 20, 30, 40};
  ASSERT_AXON_OK(axon_memory_copy(a.get(), a_values, 16, stream.get()));
  ASSERT_AXON_OK(axon_memory_copy(b.get(), b_values, 16, stream.get()));
  const axon_binding bindings[] = {{a.get(), 16}, {b.get(), 16}, {sum.get(), 16}, {seven.get(), 4}};
  ASSERT_AXON_OK(axon_stream_launch_executable(stream.get(), loaded, "main", bindings, 4, nullptr, 0));
  float result[4] = {};
  ASSERT_AXON_OK(axon_memory_copy(result, sum.get(), 16, stream.get()));
  EXPECT_EQ(result[1], 42.0f);
  ASSERT_AXON_OK(axon_executable_destroy(loaded));

  image[image.size() / 2] ^= 0x5a;  // damaged: refused at load, not run
  image.resize(8);
  EXPECT_AXON_STATUS(AXON_ERROR_INVALID_VALUE, axon_executable_load(0, format, image.data(), image.size(), &loaded));
}

TEST(Executable, AHostSharedObjectHasNoOtherImage) {
  REQUIRE_HOST_EXECUTABLES();
  LoadedKernels kernels(0);
  const char* format = nullptr;
  size_t bytes = 0;
  EXPECT_AXON_STATUS(AXON_ERROR_NOT_SUPPORTED, axon_executable_serialize(kernels.get(), &format, nullptr, 0, &bytes));
}
