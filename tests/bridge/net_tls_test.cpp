// bridge/net/tls.hpp's host-name helpers: every place that strips an IPv6 literal's brackets
// (the download client, the C++ client, the loopback check) goes through unbracketed().
#include "net/tls.hpp"

#include <gtest/gtest.h>

namespace tb::net {
namespace {

TEST(NetTls, UnbracketedStripsOnlyAnIpv6LiteralsBrackets) {
  EXPECT_EQ(unbracketed("[::1]"), "::1");
  EXPECT_EQ(unbracketed("[fe80::1%eth0]"), "fe80::1%eth0");
  EXPECT_EQ(unbracketed("::1"), "::1");
  EXPECT_EQ(unbracketed("example.org"), "example.org");
  EXPECT_EQ(unbracketed("[]"), "[]");  // nothing inside: not a literal
  EXPECT_EQ(unbracketed("[::1"), "[::1");
  EXPECT_EQ(unbracketed(""), "");
}

TEST(NetTls, LoopbackTakesNamesAndLiteralsWithOrWithoutBrackets) {
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("::1"));
  EXPECT_TRUE(is_loopback("[::1]"));
  EXPECT_FALSE(is_loopback("[2001:db8::1]"));
  EXPECT_FALSE(is_loopback("10.0.0.1"));
  EXPECT_FALSE(is_loopback("example.org"));
}

}  // namespace
}  // namespace tb::net
