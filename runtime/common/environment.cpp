// Reading and parsing the AXON_* environment variables the drivers share.

#include "environment.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "driver_error.h"

namespace axon::common {
namespace {

std::string trim_and_lower(const std::string& text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  std::string result = text.substr(begin, end - begin);
  for (char& character : result) {
    character = static_cast<char>(std::tolower(static_cast<unsigned char>(character)));
  }
  return result;
}

std::optional<unsigned> binary_suffix_shift(const std::string& suffix) {
  if (suffix.empty() || suffix == "b") return 0;
  static const char* const kPrefixes = "kmgt";
  for (unsigned index = 0; kPrefixes[index] != '\0'; ++index) {
    const std::string prefix(1, kPrefixes[index]);
    if (suffix == prefix || suffix == prefix + "b" || suffix == prefix + "ib") {
      return 10 * (index + 1);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> environment_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::size_t> parse_byte_size(const std::string& text) {
  const std::string normalized = trim_and_lower(text);
  std::size_t position = 0;
  std::uint64_t number = 0;
  const std::uint64_t limit = std::numeric_limits<std::size_t>::max();
  while (position < normalized.size() && std::isdigit(static_cast<unsigned char>(normalized[position]))) {
    const unsigned digit = static_cast<unsigned>(normalized[position] - '0');
    if (number > (limit - digit) / 10) return std::nullopt;
    number = number * 10 + digit;
    ++position;
  }
  if (position == 0) return std::nullopt;
  std::size_t suffix_begin = position;
  while (suffix_begin < normalized.size() && normalized[suffix_begin] == ' ') ++suffix_begin;
  const std::optional<unsigned> shift = binary_suffix_shift(normalized.substr(suffix_begin));
  if (!shift) return std::nullopt;
  if (*shift > 0 && number > (limit >> *shift)) return std::nullopt;
  return static_cast<std::size_t>(number << *shift);
}

std::optional<bool> parse_flag(const std::string& text) {
  const std::string normalized = trim_and_lower(text);
  if (normalized == "1" || normalized == "true" || normalized == "yes" || normalized == "on") {
    return true;
  }
  if (normalized.empty() || normalized == "0" || normalized == "false" || normalized == "no" || normalized == "off") {
    return false;
  }
  return std::nullopt;
}

std::optional<int> device_count_from_environment() {
  const auto text = environment_value("AXON_DEVICE_COUNT");
  if (!text) return std::nullopt;
  const std::optional<std::size_t> count = parse_byte_size(*text);
  const bool plain_integer = trim_and_lower(*text).find_first_not_of("0123456789") == std::string::npos;
  if (!count || !plain_integer || *count > static_cast<std::size_t>(kMaximumDeviceCount)) {
    fail(AXON_ERROR_INVALID_VALUE, "driver initialization failed: AXON_DEVICE_COUNT must be an integer in [0, ",
         kMaximumDeviceCount, "], got \"", *text, "\"");
  }
  return static_cast<int>(*count);
}

std::optional<std::size_t> device_memory_from_environment() {
  const auto text = environment_value("AXON_DEVICE_MEMORY");
  if (!text) return std::nullopt;
  const std::optional<std::size_t> bytes = parse_byte_size(*text);
  if (!bytes || *bytes == 0) {
    fail(AXON_ERROR_INVALID_VALUE,
         "driver initialization failed: AXON_DEVICE_MEMORY must be a positive byte count such as "
         "8589934592, 512MiB, 2GiB or 1G, got \"",
         *text, "\"");
  }
  return *bytes;
}

void read_flag_from_environment(const char* name, bool* destination) {
  if (const auto text = environment_value(name)) {
    const std::optional<bool> value = parse_flag(*text);
    if (!value) {
      fail(AXON_ERROR_INVALID_VALUE, "driver initialization failed: ", name,
           " must be 0 or 1 (or true/false, yes/no, on/off), got \"", *text, "\"");
    }
    *destination = *value;
  }
}

}  // namespace axon::common
