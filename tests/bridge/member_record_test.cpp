// What the federation reads back from its c10d store, parsed strictly (member_record.hpp). The
// records' round trips and signatures are in federation_test.cpp.
#include <gtest/gtest.h>

#include "member_record.hpp"

namespace tb::bridge {
namespace {

// Rank 1 of 2, serving one CPU device.
FederationMember one_cpu_member() {
  FederationMember m;
  m.rank = 1;
  m.address = "ws://127.0.0.1:4001";
  m.device_count = 1;
  m.device_names = {"cpu"};
  return m;
}

TEST(ParseRank, TakesTheDecimalAMemberWrites) {
  for (std::uint32_t rank : {0u, 1u, 7u, 10u, 4095u}) {
    auto parsed = parse_rank(std::to_string(rank), 4096);
    ASSERT_TRUE(parsed) << rank << ": " << parsed.error().what();
    EXPECT_EQ(parsed.value(), rank);
  }
  EXPECT_EQ(parse_rank("4294967294", UINT32_MAX).value(), 4294967294u);
}

// std::stoul, which poll_rank used, read "7abc" as 7, " 7" and "+7" as 7, and "-1" as the largest
// unsigned long; a store entry that is no rank now names none.
TEST(ParseRank, RefusesWhatIsNotExactlyARankOfTheFederation) {
  for (const char* bad : {"", " 7", "7 ", "+7", "-1", "7abc", "07", "00", "0x7", "7\n", "1e3",
                          "\xd9\xa7",  // ARABIC-INDIC DIGIT SEVEN
                          "18446744073709551617", "99999999999"}) {
    EXPECT_FALSE(parse_rank(bad, 8)) << bad;
  }
  EXPECT_FALSE(parse_rank("8", 8));
  EXPECT_FALSE(parse_rank("0", 0));
  EXPECT_FALSE(parse_rank(std::string_view("1\0", 2), 8));
  auto error = parse_rank("-1", 8);
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().what().find("\"-1\""), std::string::npos) << error.error().what();
  EXPECT_NE(error.error().what().find("8 ranks"), std::string::npos) << error.error().what();
}

// Found by fuzz/store_fuzzer.cpp: the device count was read with std::stoull, so "devices 1abc",
// "devices 1\0\0", " 1" and "+1" all read as 1: one member had many records, and what a record
// said was not what its bytes said. A record is now its member's canonical text alone.
TEST(MemberRecord, TheDeviceCountIsItsDecimalAlone) {
  const FederationMember m = one_cpu_member();
  const std::string text = encode_member_record(m, 2, std::nullopt).value();
  ASSERT_TRUE(decode_member_record(text, 1, 2, std::nullopt));
  const std::string line = "devices 1\n";
  ASSERT_NE(text.find(line), std::string::npos);
  for (const std::string& count : {std::string("1abc"), std::string("1\0\0", 3), std::string(" 1"),
                                   std::string("+1"), std::string("01"), std::string("1 ")}) {
    std::string other = text;
    other.replace(other.find(line), line.size(), "devices " + count + "\n");
    EXPECT_FALSE(decode_member_record(other, 1, 2, std::nullopt)) << count;
  }
}

// Found by fuzz/store_fuzzer.cpp: a signature that did not start a line of its own was taken, so
// "device cpumac -" read as the device "cpu" (a second text for one record).
TEST(MemberRecord, TheSignatureIsALineOfItsOwn) {
  const FederationMember m = one_cpu_member();
  std::string text = encode_member_record(m, 2, std::nullopt).value();
  ASSERT_TRUE(decode_member_record(text, 1, 2, std::nullopt));
  text.erase(text.rfind("\nmac -\n"), 1);
  EXPECT_FALSE(decode_member_record(text, 1, 2, std::nullopt)) << text;
}

// Found by fuzz/store_fuzzer.cpp: a device name (or an address) with a line break was written as
// it is, and its record read back as other lines: one name "cpu\ndevice gpu" with a count of 2
// made a record of two devices, "cpu" and "gpu". Such a member now has no record.
TEST(MemberRecord, AMemberWithALineBreakInANameHasNoRecord) {
  FederationMember m = one_cpu_member();
  m.device_count = 2;
  m.device_names = {"cpu\ndevice gpu"};
  EXPECT_FALSE(encode_member_record(m, 2, std::nullopt));
  m.device_count = 1;
  EXPECT_FALSE(encode_member_record(m, 2, std::nullopt));
  m.device_names = {"cpu"};
  m.address = "ws://127.0.0.1:4001\ndevices 1";
  EXPECT_FALSE(encode_member_record(m, 2, std::nullopt));
  m.address = "ws://127.0.0.1:4001";
  m.device_count = 2;  // a count that is not its names'
  EXPECT_FALSE(encode_member_record(m, 2, std::nullopt));
  m.device_count = 1;
  auto text = encode_member_record(m, 2, std::nullopt);
  ASSERT_TRUE(text) << text.error().what();
  EXPECT_TRUE(decode_member_record(text.value(), 1, 2, std::nullopt));
}

}  // namespace
}  // namespace tb::bridge
