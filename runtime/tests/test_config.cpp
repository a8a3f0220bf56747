// Parsing of the emulated driver's AXON_* variables (emulated driver only).

#include <gtest/gtest.h>

#include <cstdint>

#include "environment.h"

using axon::common::parse_byte_size;
using axon::common::parse_flag;

TEST(ConfigByteSize, AcceptsPlainBytesAndBinarySuffixes) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  EXPECT_EQ(parse_byte_size("512MiB"), size_t{512} << 20);
  EXPECT_EQ(parse_byte_size("2GiB"), size_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1G"), size_t{1} << 30);
  EXPECT_EQ(parse_byte_size("1gb"), size_t{1} << 30);
  EXPECT_EQ(parse_byte_size("64 k"), size_t{64} << 10);
  EXPECT_EQ(parse_byte_size(" 3T "), size_t{3} << 40);
  EXPECT_EQ(parse_byte_size("100B"), 100u);
}

TEST(ConfigByteSize, RejectsMalformedAndOverflowingValues) {
  for (const char* text : {"", " ", "GiB", "-1", "1.5G", "12 bananas", "1 2", "0x10", "1Gi", "1iB", "9999999999T",
                           "18446744073709551616"}) {
    EXPECT_FALSE(parse_byte_size(text).has_value()) << '"' << text << '"';
  }
  EXPECT_EQ(parse_byte_size("18446744073709551615"), SIZE_MAX);
}

TEST(ConfigFlag, AcceptsCommonSpellings) {
  for (const char* text : {"1", "true", "YES", "on"}) EXPECT_EQ(parse_flag(text), true) << text;
  for (const char* text : {"0", "false", "No", "off", ""}) EXPECT_EQ(parse_flag(text), false) << text;
  for (const char* text : {"2", "maybe", "1 1"}) EXPECT_FALSE(parse_flag(text).has_value()) << text;
}
