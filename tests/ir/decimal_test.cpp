// tb::parse_decimal (torchbridge/decimal.hpp): the one way the host reads a number from text it
// did not write, with nothing to catch.
#include "torchbridge/decimal.hpp"

#include <gtest/gtest.h>

namespace {

using tb::parse_decimal;

TEST(ParseDecimal, TakesDigitsOnlyWithinTheBound) {
  EXPECT_EQ(parse_decimal("0"), 0u);
  EXPECT_EQ(parse_decimal("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_decimal<std::uint16_t>("65535"), 65535);
  EXPECT_EQ(parse_decimal<int>("7", 7), 7);
  for (const char* text : {"", "7abc", "-1", "+1", " 1", "1 ", "0x10", "1e3", "\xd9\xa3"}) {
    EXPECT_FALSE(parse_decimal(text)) << text;
  }
  // Out of range: std::stoul and std::stoi threw here.
  EXPECT_FALSE(parse_decimal("18446744073709551616"));
  EXPECT_FALSE(parse_decimal<std::uint16_t>("65536"));
  EXPECT_FALSE(parse_decimal<int>("99999999999"));
  EXPECT_FALSE(parse_decimal<int>("8", 7));
}

}  // namespace
