#include "torchbridge/ir/msgpack_io.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <msgpack.hpp>

namespace tb::ir {
namespace {

std::string hex(const std::vector<std::uint8_t>& v) {
  std::string s;
  for (auto b : v) s += fmt::format("{:02x}", b);
  return s;
}

template <class F>
std::string written(F&& f) {
  Writer w;
  f(w);
  return hex(w.buffer());
}

Bytes bytes_of(std::vector<std::uint8_t> v) {
  return Bytes::from_vector(std::move(v));
}

TEST(Writer, UnsignedIntegersUseTheSmallestForm) {
  EXPECT_EQ(written([](Writer& w) { w.u64(0); }), "00");
  EXPECT_EQ(written([](Writer& w) { w.u64(127); }), "7f");
  EXPECT_EQ(written([](Writer& w) { w.u64(128); }), "cc80");
  EXPECT_EQ(written([](Writer& w) { w.u64(255); }), "ccff");
  EXPECT_EQ(written([](Writer& w) { w.u64(256); }), "cd0100");
  EXPECT_EQ(written([](Writer& w) { w.u64(65536); }), "ce00010000");
  EXPECT_EQ(written([](Writer& w) { w.u64(std::uint64_t{1} << 32); }), "cf0000000100000000");
}

TEST(Writer, NonNegativeSignedIntegersUseTheUnsignedForms) {
  EXPECT_EQ(written([](Writer& w) { w.i64(5); }), "05");
  EXPECT_EQ(written([](Writer& w) { w.i64(200); }), "ccc8");
  EXPECT_EQ(written([](Writer& w) { w.i64(-1); }), "ff");
  EXPECT_EQ(written([](Writer& w) { w.i64(-32); }), "e0");
  EXPECT_EQ(written([](Writer& w) { w.i64(-33); }), "d0df");
  EXPECT_EQ(written([](Writer& w) { w.i64(-129); }), "d1ff7f");
  EXPECT_EQ(written([](Writer& w) { w.i64(std::numeric_limits<std::int64_t>::min()); }),
            "d38000000000000000");
}

TEST(Writer, FloatsAreAlwaysFloat64AndContainersUseTheSmallestHeader) {
  EXPECT_EQ(written([](Writer& w) { w.f64(1.0); }), "cb3ff0000000000000");
  EXPECT_EQ(written([](Writer& w) { w.str(std::string(31, 'a')); }).substr(0, 2), "bf");
  EXPECT_EQ(written([](Writer& w) { w.str(std::string(32, 'a')); }).substr(0, 4), "d920");
  EXPECT_EQ(written([](Writer& w) { w.bin("", 0); }), "c400");
  EXPECT_EQ(written([](Writer& w) { w.array(15); }), "9f");
  EXPECT_EQ(written([](Writer& w) { w.array(16); }), "dc0010");
  EXPECT_EQ(written([](Writer& w) { w.map(1); }), "81");
  EXPECT_EQ(written([](Writer& w) { w.map(16); }), "de0010");
}

TEST(Reader, AcceptsEveryIntegerWidthThatFits) {
  for (auto bytes : std::vector<std::vector<std::uint8_t>>{{0x05},
                                                           {0xcc, 0x05},
                                                           {0xcd, 0x00, 0x05},
                                                           {0xce, 0, 0, 0, 5},
                                                           {0xcf, 0, 0, 0, 0, 0, 0, 0, 5},
                                                           {0xd0, 0x05},
                                                           {0xd3, 0, 0, 0, 0, 0, 0, 0, 5}}) {
    Reader r(bytes_of(bytes));
    std::uint64_t v = 0;
    ASSERT_TRUE(r.u64(v)) << r.error().what();
    EXPECT_EQ(v, 5u);
    EXPECT_TRUE(r.at_end());
  }
  Reader neg(bytes_of({0xd1, 0xff, 0x7f}));
  std::int64_t i = 0;
  ASSERT_TRUE(neg.i64(i));
  EXPECT_EQ(i, -129);
}

TEST(Reader, RefusesNegativeForUnsignedAndOverflowForSigned) {
  Reader r(bytes_of({0xff}));
  std::uint64_t u = 0;
  EXPECT_FALSE(r.u64(u));
  EXPECT_NE(r.error().message.find("expected unsigned integer, got -1"), std::string::npos);

  Reader big(bytes_of({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  std::int64_t i = 0;
  EXPECT_FALSE(big.i64(i));
  EXPECT_NE(big.error().message.find("overflows i64"), std::string::npos);
}

TEST(Reader, TruncatedInputIsAnErrorNotARead) {
  Reader r(bytes_of({0xcd, 0x01}));
  std::uint64_t v = 0;
  EXPECT_FALSE(r.u64(v));
  EXPECT_NE(r.error().message.find("truncated input"), std::string::npos);
  // Once failed, everything fails.
  EXPECT_FALSE(r.nil());
}

TEST(Reader, DeclaredLengthsLongerThanTheInputAreRefusedUpFront) {
  // array32 declaring 2^31 elements, then nothing.
  Reader a(bytes_of({0xdd, 0x80, 0x00, 0x00, 0x00}));
  std::uint32_t n = 0;
  EXPECT_FALSE(a.array(n));
  EXPECT_NE(a.error().message.find("array declares 2147483648 elements but only 0 byte(s) remain"),
            std::string::npos)
      << a.error().message;
  // bin32 declaring 1 GiB.
  Reader b(bytes_of({0xc6, 0x40, 0x00, 0x00, 0x00, 0x01}));
  Bytes out;
  EXPECT_FALSE(b.bin(out));
  EXPECT_NE(b.error().message.find("truncated"), std::string::npos);
  // map16 declaring 100 entries with 3 bytes left.
  Reader m(bytes_of({0xde, 0x00, 0x64, 0x01, 0x02, 0x03}));
  EXPECT_FALSE(m.map(n));
  EXPECT_NE(m.error().message.find("map declares 100 entries"), std::string::npos);
}

TEST(Reader, SkipBoundsNestingDepth) {
  std::vector<std::uint8_t> deep(200, 0x91);  // [[[[...]]]]
  deep.push_back(0xc0);
  Reader r(bytes_of(deep));
  EXPECT_FALSE(r.skip());
  EXPECT_NE(r.error().message.find("nesting deeper than 64 levels"), std::string::npos);

  std::vector<std::uint8_t> ok(10, 0x91);
  ok.push_back(0xc0);
  Reader r2(bytes_of(ok));
  EXPECT_TRUE(r2.skip());
  EXPECT_TRUE(r2.at_end());
}

TEST(Reader, BinIsAViewIntoTheFrame) {
  auto frame = bytes_of({0xc4, 0x03, 'a', 'b', 'c'});
  Reader r(frame);
  Bytes out;
  ASSERT_TRUE(r.bin(out));
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(out.data(), frame.data() + 2);
  EXPECT_EQ(out.owner(), frame.owner());
}

TEST(Reader, APathDeeperThanItKeepsEndsInAnEllipsis) {
  Reader r(bytes_of({0xa1, 'x'}));
  std::vector<std::unique_ptr<PathGuard>> guards;
  for (int i = 0; i < 40; ++i) guards.push_back(std::make_unique<PathGuard>(r, "Level"));
  std::uint64_t v = 0;
  EXPECT_FALSE(r.u64(v));
  const std::string& context = r.error().context;
  EXPECT_EQ(context.substr(0, 13), "Level > Level");
  EXPECT_EQ(context.substr(context.size() - 6), " > \u2026");
}

TEST(Reader, ErrorsCarryThePath) {
  Reader r(bytes_of({0xa1, 'x'}));
  PathGuard a(r, "Task");
  PathGuard b(r, "RegisterOperation");
  PathGuard c(r, std::int64_t{1});
  std::uint64_t v = 0;
  EXPECT_FALSE(r.u64(v));
  EXPECT_EQ(r.error().context, "Task > RegisterOperation[1]");
  EXPECT_NE(
      r.error().what().find("Task > RegisterOperation[1]: expected unsigned integer, got string"),
      std::string::npos)
      << r.error().what();
}

// msgpack-cxx is the oracle: whatever it packs, we read; whatever we write, it reads alike.
// The forms read inline (msgpack_io.hpp) against msgpack-cxx, at every first byte and every length
// of input after it: a value msgpack-cxx reads whole is read the same, to the same position; one
// cut short is an error, never a read past the end; and once failed, the inline forms fail too.
TEST(Reader, InlineFormsAgreeWithMsgpackCxxAtTheEdgesOfTheInput) {
  for (int b = 0; b < 256; ++b) {
    for (std::uint8_t tail = 0; tail <= 17; ++tail) {
      std::vector<std::uint8_t> v{static_cast<std::uint8_t>(b)};
      for (std::uint8_t i = 1; i <= tail; ++i) v.push_back(i);  // fixints: one byte an element
      const auto what = fmt::format("0x{:02x} and {} byte(s)", b, tail);
      msgpack::object_handle oh;
      std::size_t end = 0;
      bool whole = true;
      try {
        oh = msgpack::unpack(reinterpret_cast<const char*>(v.data()), v.size(), end);
      } catch (const std::exception&) {
        whole = false;
      }
      const auto type = whole ? oh.get().type : msgpack::type::NIL;
      const auto check = [&](auto read, bool expected_ok, auto expected) {
        Reader r(Bytes::copy_of(v.data(), v.size()));
        decltype(expected) got{};
        const bool ok = read(r, got);
        EXPECT_EQ(ok, expected_ok) << what;
        if (ok && expected_ok) {
          EXPECT_EQ(got, expected) << what;
          EXPECT_EQ(r.position(), end) << what;
        }
        if (!ok) EXPECT_TRUE(r.failed()) << what;
      };
      const auto u64 = [](Reader& r, std::uint64_t& x) { return r.u64(x); };
      const auto i64 = [](Reader& r, std::int64_t& x) { return r.i64(x); };
      const auto str = [](Reader& r, std::string& x) {
        std::string_view sv;
        const bool ok = r.str(sv);
        x = std::string(sv);
        return ok;
      };
      const auto arr = [](Reader& r, std::uint32_t& n) {
        if (!r.array(n)) return false;
        for (std::uint32_t i = 0; i < n; ++i) r.skip();
        return !r.failed();
      };
      const auto map = [](Reader& r, std::uint32_t& n) {
        if (!r.map(n)) return false;
        for (std::uint32_t i = 0; i < 2 * n; ++i) r.skip();
        return !r.failed();
      };
      const bool pos = type == msgpack::type::POSITIVE_INTEGER;
      const bool neg = type == msgpack::type::NEGATIVE_INTEGER;
      check(u64, pos, pos ? oh.get().via.u64 : std::uint64_t{0});
      check(i64, (pos && oh.get().via.u64 <= INT64_MAX) || neg,
            pos   ? static_cast<std::int64_t>(oh.get().via.u64)
            : neg ? oh.get().via.i64
                  : 0);
      check(str, type == msgpack::type::STR,
            type == msgpack::type::STR ? oh.get().as<std::string>() : std::string());
      check(arr, type == msgpack::type::ARRAY,
            type == msgpack::type::ARRAY ? oh.get().via.array.size : std::uint32_t{0});
      check(map, type == msgpack::type::MAP,
            type == msgpack::type::MAP ? oh.get().via.map.size : std::uint32_t{0});
    }
  }
  // A failed reader fails every inline form, however valid the bytes left.
  Reader r(bytes_of({0xc1, 0x01, 0xa1, 0x61, 0x91, 0x01, 0x81, 0x01, 0x01}));
  EXPECT_FALSE(r.nil());
  std::uint64_t u = 0;
  std::int64_t i = 0;
  std::string_view sv;
  std::uint32_t n = 0;
  EXPECT_FALSE(r.u64(u));
  EXPECT_FALSE(r.i64(i));
  EXPECT_FALSE(r.str(sv));
  EXPECT_FALSE(r.array(n));
  EXPECT_FALSE(r.array_of(1));
  EXPECT_FALSE(r.map(n));
  EXPECT_EQ(r.position(), 0u);
}

TEST(ReaderWriter, AgreeWithMsgpackCxx) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 2000; ++round) {
    const std::uint64_t u = rng() >> (rng() % 64);
    const std::int64_t i = static_cast<std::int64_t>(rng()) >> (rng() % 64);
    const double d = static_cast<double>(static_cast<std::int64_t>(rng())) / 3.0;
    const std::string s(rng() % 300, 'z');

    msgpack::sbuffer sb;
    msgpack::packer<msgpack::sbuffer> pk(sb);
    pk.pack_array(4);
    pk.pack(u);
    pk.pack(i);
    pk.pack(d);
    pk.pack(s);
    Reader r(Bytes::copy_of(sb.data(), sb.size()));
    std::uint64_t ru = 0;
    std::int64_t ri = 0;
    double rd = 0;
    std::string_view rs;
    ASSERT_TRUE(r.array_of(4) && r.u64(ru) && r.i64(ri) && r.f64(rd) && r.str(rs));
    EXPECT_EQ(ru, u);
    EXPECT_EQ(ri, i);
    EXPECT_EQ(rd, d);
    EXPECT_EQ(rs, s);

    Writer w;
    w.array(4);
    w.u64(u);
    w.i64(i);
    w.f64(d);
    w.str(s);
    auto oh = msgpack::unpack(reinterpret_cast<const char*>(w.buffer().data()), w.buffer().size());
    const auto arr = oh.get().as<std::tuple<std::uint64_t, std::int64_t, double, std::string>>();
    EXPECT_EQ(std::get<0>(arr), u);
    EXPECT_EQ(std::get<1>(arr), i);
    EXPECT_EQ(std::get<2>(arr), d);
    EXPECT_EQ(std::get<3>(arr), s);
  }
}

}  // namespace
}  // namespace tb::ir
