#include "collective.hpp"

#include <thread>

#include <gtest/gtest.h>

#include "task_runner.hpp"
#include "torchbridge/libtorch/libtorch.hpp"

namespace tb::bridge {
namespace {

using namespace tb::ir;

TensorIr t(std::uint64_t id, TensorStatus status = TensorStatus::ReadOnly) {
  return TensorIr{TensorId{id}, Shape{{3}}, status, DTypeKind::F32};
}

TensorData f32(std::vector<float> v) {
  return TensorData{Bytes::copy_of(v.data(), v.size() * 4), {v.size()}, DTypeKind::F32};
}

std::vector<float> read(backend::Executor& e, std::uint64_t id) {
  auto data = e.read_tensor(t(id));
  EXPECT_TRUE(data) << (data ? "" : data.error().what());
  if (!data) return {};
  std::vector<float> out(3);
  std::memcpy(out.data(), data.value().bytes.data(), 12);
  return out;
}

// Three sessions on three devices of one host all-reduce their tensors, as Burn's client does
// (one AllReduce op per device, the device ids being positions on the host).
TEST(Collective, ThreeDevicesAllReduceToIdenticalSumsAndMeans) {
  auto backend = std::move(backend::libtorch::make_backend({"cpu", nullptr})).value();
  CollectiveHub hub;
  SessionServices services;
  services.collectives = &hub;
  services.device_count = 3;
  services.transfer_timeout = std::chrono::milliseconds(10000);
  std::vector<std::unique_ptr<TaskRunner>> runners;
  for (std::uint32_t d = 0; d < 3; ++d) {
    runners.push_back(std::make_unique<TaskRunner>(d + 1, d, backend->new_executor(), services,
                                                   [](TaskResponse) {}));
    ASSERT_TRUE(runners[d]->executor().register_tensor(
        TensorId{1}, f32({1.0f * (d + 1), 10.0f * (d + 1), -1.0f})));
  }
  const std::vector<DeviceIdIr> devices = {{0, 2}, {0, 0}, {0, 1}};
  for (auto op : {ReduceOperation::Sum, ReduceOperation::Mean}) {
    const std::uint64_t out = op == ReduceOperation::Sum ? 2 : 3;
    std::vector<std::thread> threads;
    for (auto& r : runners) {
      threads.emplace_back([&, op, out] {
        Task task = RegisterOperationTask{
            StreamId{0}, make_op<OpKind::Distributed_AllReduce>(
                             AllReduceOpIr{t(1), t(out, TensorStatus::NotInit), op, devices})};
        r->run(task);
      });
    }
    for (auto& th : threads) th.join();
    const std::vector<float> expected =
        op == ReduceOperation::Sum ? std::vector<float>{6, 60, -3} : std::vector<float>{2, 20, -1};
    for (auto& r : runners) EXPECT_EQ(read(r->executor(), out), expected);
  }
  for (auto& r : runners) EXPECT_TRUE(r->executor().sync());
}

TEST(Collective, AMissingParticipantTimesOutWithAClearError) {
  auto backend = std::move(backend::libtorch::make_backend({"cpu", nullptr})).value();
  CollectiveHub hub;
  SessionServices services;
  services.collectives = &hub;
  services.device_count = 6;
  services.transfer_timeout = std::chrono::milliseconds(200);
  TaskRunner runner(1, 0, backend->new_executor(), services, [](TaskResponse) {});
  ASSERT_TRUE(runner.executor().register_tensor(TensorId{1}, f32({1, 2, 3})));
  Task task = RegisterOperationTask{
      StreamId{0}, make_op<OpKind::Distributed_AllReduce>(AllReduceOpIr{
                       t(1), t(2, TensorStatus::NotInit), ReduceOperation::Sum, {{0, 0}, {0, 1}}})};
  runner.run(task);
  auto r = runner.executor().read_tensor(t(2));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("all_reduce over devices [0, 1]: device 0 waited 200 ms"),
            std::string::npos)
      << r.error().what();
  Task other = RegisterOperationTask{
      StreamId{0}, make_op<OpKind::Distributed_AllReduce>(AllReduceOpIr{
                       t(1), t(3, TensorStatus::NotInit), ReduceOperation::Sum, {{0, 5}}})};
  runner.run(other);
  auto r2 = runner.executor().read_tensor(t(3));
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().what().find("device 0 is not among the devices [5]"), std::string::npos);
}

}  // namespace
}  // namespace tb::bridge
