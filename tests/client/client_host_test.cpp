// The client against our host in-process: the shared program, tensor lifetimes as the host sees
// them, host errors, transfers between devices and hosts, quantized tensors and custom ops.
#include "torchbridge/client/tensor.hpp"

#include <atomic>
#include <cmath>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/host_util.hpp"
#include "client/program.hpp"

namespace tb::test {
namespace {

using namespace std::chrono_literals;
using client::Device;
using client::Tensor;

Device connect(const ClientTestHost& host, std::uint32_t index = 0) {
  auto d = Device::connect(host.address(), index);
  EXPECT_TRUE(d) << (d ? "" : d.error().what());
  return d ? d.value() : Device();
}

void expect_program(const std::vector<CaseResult>& results) {
  ASSERT_FALSE(results.empty());
  for (const auto& c : results) {
    ASSERT_TRUE(c.values) << c.name << ": " << c.values.error().what();
    EXPECT_EQ(mismatch(c.values.value(), c.expected, c.tolerance), "") << c.name;
  }
}

TEST(ClientOnHost, ProgramOnOneDevice) {
  ClientTestHost host;
  auto dev = connect(host);
  expect_program(run_program(dev));
  EXPECT_TRUE(dev.sync());
}

TEST(ClientOnHost, ProgramWithTransfersBetweenDevicesOfOneHost) {
  ClientTestHost host(2);
  auto dev0 = connect(host, 0);
  auto dev1 = connect(host, 1);
  EXPECT_EQ(dev0.device_count(), 2u);
  expect_program(run_program(dev0, dev1));
}

TEST(ClientOnHost, ProgramWithTransfersBetweenHosts) {
  ClientTestHost host_a;
  ClientTestHost host_b;
  auto a = connect(host_a);
  auto b = connect(host_b);
  expect_program(run_program(a, b));
  expect_program(run_program(b, a));
}

// Uploads go out as borrowed segments and answers are read in place (MessageBuffer), in chunks of
// 1 MiB: large and odd-sized tensors of every width must come back exactly, and small answers
// between them too.
TEST(ClientOnHost, LargeAndOddSizedTransfersComeBackExactly) {
  ClientTestHost host;
  auto dev = connect(host);
  for (const std::size_t n : {std::size_t{3 << 20} + 1, std::size_t{16385}, std::size_t{1}}) {
    std::vector<float> f(n);
    for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(i % 9973) * 0.5f - 7.0f;
    auto back = Tensor::from_vector(dev, f).to_vector<float>();
    ASSERT_TRUE(back) << back.error().what();
    EXPECT_TRUE(back.value() == f) << n << " floats";
    std::vector<bool> b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = (i * 7) % 3 == 0;
    auto bools = Tensor::from_vector(dev, b).to_vector<bool>();
    ASSERT_TRUE(bools) << bools.error().what();
    EXPECT_TRUE(bools.value() == b) << n << " bools";
  }
  const auto small = Tensor::from_vector<float>(dev, {1, 2, 3}).to_vector<float>();
  ASSERT_TRUE(small);
  EXPECT_EQ(small.value(), (std::vector<float>{1, 2, 3}));
}

TEST(ClientOnHost, LastReferencesFreeHostTensors) {
  ClientTestHost host;
  auto dev = connect(host);
  auto live = [&] { return host.live_tensors(dev); };
  ASSERT_EQ(live(), 0u);
  auto a = Tensor::from_vector<float>(dev, {1, 2, 3});
  auto b = a + 1.0;
  EXPECT_EQ(live(), 2u);
  {
    auto c = std::move(b) * 2.0;  // b handed over: the host frees it after the op
    EXPECT_EQ(live(), 2u);
    auto copy = c;  // copies share one host tensor
    EXPECT_EQ(c.use_count(), 2);
    EXPECT_EQ(live(), 2u);
  }
  EXPECT_EQ(live(), 1u);  // c's last reference went: Drop
  auto kept = a.to_vector<float>();
  ASSERT_TRUE(kept);
  EXPECT_EQ(live(), 1u);  // a read of a kept tensor leaves it
  auto values = std::move(a).to_vector<float>();
  ASSERT_TRUE(values);
  EXPECT_EQ(values.value(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(live(), 0u);  // the last reference was read ReadWrite
}

TEST(ClientOnHost, HostErrorsComeBackWithTheHostsMessage) {
  ClientTestHost host;
  auto dev = connect(host);
  auto x = Tensor::from_vector<float>(dev, {1, 2});
  auto outs = client::custom(dev, "no.such.op", {x}, {{{2}, ir::DType(ir::DTypeKind::F32)}});
  ASSERT_EQ(outs.size(), 1u);
  auto read = outs[0].to_vector<float>();
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kExecution);
  EXPECT_NE(read.error().what().find("no.such.op"), std::string::npos) << read.error().what();
  // The read has reported the failure; as on Burn's host, the next sync does not report it again.
  EXPECT_TRUE(dev.sync());
  // A failure no read has reported comes with the next sync.
  auto unread = client::custom(dev, "no.such.op", {x}, {{{2}, ir::DType(ir::DTypeKind::F32)}});
  auto s = dev.sync();
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().what().find("no.such.op"), std::string::npos) << s.error().what();
  // The session goes on.
  EXPECT_EQ((x * 3.0).to_vector<float>().value(), (std::vector<float>{3, 6}));
}

TEST(ClientOnHost, CustomOpById) {
  ClientTestHost host;
  auto dev = connect(host);
  auto x = Tensor::from_vector<float>(dev, {1, 2, 3});
  auto y = Tensor::from_vector<float>(dev, {10, 20, 30});
  auto outs = client::custom(dev, "tb.test.axpy", {x, y}, {{{3}, ir::DType(ir::DTypeKind::F32)}},
                             {ir::ScalarIr::f(2.0)});
  ASSERT_EQ(outs.size(), 1u);
  auto v = (outs[0] + 1.0).to_vector<float>();
  ASSERT_TRUE(v) << v.error().what();
  EXPECT_EQ(v.value(), (std::vector<float>{13, 25, 37}));
}

TEST(ClientOnHost, DtypeUsageAndUnknownDevice) {
  ClientTestHost host;
  auto dev = connect(host);
  auto usage = dev.dtype_usage(ir::DType(ir::DTypeKind::F32));
  ASSERT_TRUE(usage) << usage.error().what();
  EXPECT_EQ(usage.value() & 3, 3);
  auto refused = Device::connect(host.address(), 7);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound) << refused.error().what();
}

// Burn's per-tensor symmetric formulas: scale = 2 max|x| / 254, q = round half away from zero.
TEST(ClientOnHost, QuantizedTensorsMoveBitIdentically) {
  ClientTestHost host(2);
  ClientTestHost other_host;
  auto dev0 = connect(host, 0);
  auto dev1 = connect(host, 1);
  auto far = connect(other_host);
  const std::vector<float> values{-1.5f, -0.2f, 0.0f, 0.3f, 0.75f, 1.27f};
  auto x = Tensor::from_vector<float>(dev0, values, {2, 3});
  auto q = client::quantize_dynamic(x);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q.dtype().is_quantized());
  auto data = q.to_data();
  ASSERT_TRUE(data) << data.error().what();
  auto q8 = client::q8_values(data.value());
  ASSERT_TRUE(q8) << q8.error().what();
  const float scale = q8.value().scale;
  EXPECT_NEAR(scale, 2.0f * 1.5f / 254.0f, 1e-8);
  const float inv = 1.0f / scale;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float expect = std::round(values[i] * inv);
    EXPECT_EQ(q8.value().values[i], static_cast<std::int8_t>(expect)) << i;
  }
  auto deq = client::dequantize(q).to_vector<float>();
  ASSERT_TRUE(deq) << deq.error().what();
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_FLOAT_EQ(deq.value()[i], scale * static_cast<float>(q8.value().values[i]));
  }
  // Same host, other device; and another host: the same bytes arrive, and dequantize the same.
  for (const Device* target : {&dev1, &far}) {
    auto moved = q.to(*target);
    EXPECT_EQ(moved.device(), *target);
    auto moved_data = moved.to_data();
    ASSERT_TRUE(moved_data) << moved_data.error().what();
    EXPECT_EQ(moved_data.value(), data.value());
    EXPECT_EQ(client::dequantize(std::move(moved)).to_vector<float>().value(), deq.value());
  }
  // An explicit scale.
  auto fixed = client::quantize(x, Tensor::from_vector<float>(dev0, {0.5f}));
  auto fixed_values = client::q8_values(fixed.to_data().value());
  ASSERT_TRUE(fixed_values);
  EXPECT_EQ(fixed_values.value().values, (std::vector<std::int8_t>{-3, 0, 0, 1, 2, 3}));
  EXPECT_FALSE(client::dequantize(x).ok());
}

TEST(ClientOnHost, ManyThreadsShareOneSession) {
  ClientTestHost host;
  auto dev = connect(host);
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto x = Tensor::full(dev, {4}, static_cast<double>(t));
        auto s = client::sum(x + static_cast<double>(i)).to_vector<float>();
        if (s && s.value() == std::vector<float>{static_cast<float>(4 * (t + i))}) ++good;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 80);
}

TEST(ClientOnHost, HostStoppingFailsCallsInBoundedTime) {
  auto host = std::make_unique<ClientTestHost>();
  auto dev = connect(*host);
  auto x = Tensor::from_vector<float>(dev, {1});
  ASSERT_TRUE(dev.sync());
  host->host().stop();
  const auto start = std::chrono::steady_clock::now();
  auto read = (x + 1.0).to_vector<float>(30s);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, ErrorCode::kIo) << read.error().what();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

// SessionOptions::max_message_bytes bounds what the client holds for one answer: a larger one ends
// the session with an error naming the bound; answers within it are read as usual.
TEST(ClientOnHost, AnAnswerOverTheMessageBoundEndsTheSessionWithAClearError) {
  ClientTestHost host;
  client::SessionOptions options;
  options.max_message_bytes = 1 << 20;
  auto connected = Device::connect(host.address(), 0, options);
  ASSERT_TRUE(connected) << connected.error().what();
  Device dev = connected.value();
  const std::vector<float> small(1000, 1.5f);
  auto back = Tensor::from_vector(dev, small).to_vector<float>();
  ASSERT_TRUE(back) << back.error().what();
  EXPECT_EQ(back.value(), small);

  const std::vector<float> large((1 << 20) / 4 + 1024, 2.0f);  // over 1 MiB as an answer
  auto too_big = Tensor::from_vector(dev, large).to_vector<float>();
  ASSERT_FALSE(too_big);
  EXPECT_THAT(too_big.error().what(), ::testing::HasSubstr("max_message_bytes (1048576 bytes)"));
  EXPECT_EQ(too_big.error().code, ErrorCode::kLimit);
  auto after = Tensor::from_vector(dev, small).to_vector<float>();
  EXPECT_FALSE(after) << "the session is over";
  // The host is unharmed: another session reads the same size.
  auto other = connect(host);
  auto again = Tensor::from_vector(other, large).to_vector<float>();
  ASSERT_TRUE(again) << again.error().what();
  EXPECT_EQ(again.value().size(), large.size());
}

}  // namespace
}  // namespace tb::test
