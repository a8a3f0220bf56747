// The AXON_* environment variables every driver reads the same way.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace axon::common {

// Most devices AXON_DEVICE_COUNT may ask for.
constexpr int kMaximumDeviceCount = 64;

// The variable's value, or empty when it is not set.
std::optional<std::string> environment_value(const char* name);

// "4096", "512MiB", "2GiB", "1G", "64 k": a non-negative integer with an
// optional case-insensitive binary suffix (K, KB, KiB = 1024; M...; G...; T...).
// Empty optional when malformed or not representable in size_t.
std::optional<std::size_t> parse_byte_size(const std::string& text);

// "1"/"true"/"yes"/"on" and "0"/"false"/"no"/"off"/"" (case-insensitive).
std::optional<bool> parse_flag(const std::string& text);

// AXON_DEVICE_COUNT and AXON_DEVICE_MEMORY when set. Throw
// DriverError(AXON_ERROR_INVALID_VALUE) naming the variable and its value when
// it is malformed.
std::optional<int> device_count_from_environment();
std::optional<std::size_t> device_memory_from_environment();

// Sets *destination from the flag `name` when it is set; throws like the above.
void read_flag_from_environment(const char* name, bool* destination);

}  // namespace axon::common
