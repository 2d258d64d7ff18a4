// The last-resort guard (docs/decisions.md): an exception on a network thread or a session worker
// ends that session or that request, never the process. A backend that throws on command stands in
// for every place one can come from: the handshake (network thread), an op and a read (the
// session's worker), and making a session's executor.
#include <atomic>
#include <system_error>

#include <gmock/gmock.h>

#include "backends/libtorch/op_test_util.hpp"
#include "bridge/host_raw_client.hpp"

namespace tb::test {
namespace {

using ::testing::HasSubstr;

std::atomic<std::uint64_t> next_guard_session{0x9a4d'0000'0000'0001};

struct Faults {
  std::atomic<bool> handshake{false};     // settings() throws: on the network thread
  std::atomic<bool> new_executor{false};  // new_executor() throws std::system_error
};
constexpr double kThrowingScalar = 666;     // MulScalar by this throws std::logic_error
constexpr std::uint64_t kBadAllocId = 999;  // reading this tensor throws std::bad_alloc

class ThrowingExecutor final : public backend::Executor {
 public:
  explicit ThrowingExecutor(std::unique_ptr<backend::Executor> inner) : inner_(std::move(inner)) {}
  Status register_tensor(TensorId id, const TensorData& data) override {
    return inner_->register_tensor(id, data);
  }
  Status register_alias(TensorId n, TensorId s) override { return inner_->register_alias(n, s); }
  Result<TensorData> read_tensor(const TensorIr& t) override {
    if (t.id.value == kBadAllocId) throw std::bad_alloc();
    return inner_->read_tensor(t);
  }
  Status execute(const OperationIr& op) override {
    if (op.kind == OpKind::NumericFloat_MulScalar &&
        op.as<ScalarOpIr>().rhs == ScalarIr::f(kThrowingScalar)) {
      throw std::logic_error("an injected bug");
    }
    return inner_->execute(op);
  }
  Status sync() override { return inner_->sync(); }
  void fail(const Error& e, const std::vector<TensorId>& ids) override { inner_->fail(e, ids); }
  DTypeUsageSet dtype_usage(const DType& d) override { return inner_->dtype_usage(d); }
  void seed(std::uint64_t s) override { inner_->seed(s); }
  Result<std::shared_ptr<const backend::Transferable>> take_for_transfer(
      const TensorIr& t) override {
    return inner_->take_for_transfer(t);
  }
  Status register_transferred(TensorId id, const backend::Transferable& t) override {
    return inner_->register_transferred(id, t);
  }
  Result<std::optional<ProfileToken>> profile_start() override { return inner_->profile_start(); }
  Result<std::optional<Duration>> profile_end(const ProfileToken& t,
                                              const ProfileOptions& o) override {
    return inner_->profile_end(t, o);
  }
  void profile_abandon(const ProfileToken& t) override { inner_->profile_abandon(t); }
  backend::ExecutorStats stats() const override { return inner_->stats(); }

 private:
  std::unique_ptr<backend::Executor> inner_;
};

class ThrowingBackend final : public backend::Backend {
 public:
  explicit ThrowingBackend(Faults& faults)
      : faults_(faults),
        inner_(std::move(backend::libtorch::make_backend({"cpu", nullptr})).value()) {}
  std::string device_name() const override { return inner_->device_name(); }
  DeviceSettings settings() const override {
    if (faults_.handshake) throw std::runtime_error("an injected failure in the handshake");
    return inner_->settings();
  }
  std::unique_ptr<backend::Executor> new_executor() override {
    if (faults_.new_executor) {
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    }
    return std::make_unique<ThrowingExecutor>(inner_->new_executor());
  }

 private:
  Faults& faults_;
  std::shared_ptr<backend::Backend> inner_;
};

class GuardTest : public ::testing::Test {
 protected:
  GuardTest() {
    bridge::HostOptions o;
    o.port = 0;
    host_ = std::make_unique<bridge::Host>(o, std::vector<std::shared_ptr<backend::Backend>>{
                                                  std::make_shared<ThrowingBackend>(faults_)});
    EXPECT_TRUE(host_->start());
  }
  std::uint16_t port() const { return host_->port(); }

  // A session computing all along, checked after each fault.
  void expect_computes(RawClient& c, double x) {
    c.send_tasks({register_tensor(1, make_data({2}, DTypeKind::F32, {x, x + 1})),
                  ReadTensorTask{1, stream(), tir(1, {2})}});
    auto r = c.response(10s);
    ASSERT_TRUE(r) << "the sentinel session got no answer";
    const auto& result = std::get<ReadTensorResponse>(r->content).result;
    ASSERT_TRUE(std::holds_alternative<TensorData>(result));
    EXPECT_EQ(values_of(std::get<TensorData>(result)), (std::vector<double>{x, x + 1}));
  }

  Faults faults_;
  std::unique_ptr<bridge::Host> host_;
};

TEST_F(GuardTest, AnExceptionInTheHandshakeEndsOnlyThatConnection) {
  RawClient sentinel;
  ASSERT_TRUE(sentinel.open_session(port(), next_guard_session++));
  faults_.handshake = true;
  RawClient victim;
  EXPECT_FALSE(victim.open_session(port(), next_guard_session++));
  EXPECT_TRUE(victim.read(5s).ended());
  faults_.handshake = false;
  expect_computes(sentinel, 1);
  RawClient later;
  ASSERT_TRUE(later.open_session(port(), next_guard_session++));
  expect_computes(later, 2);
  EXPECT_GE(host_->metrics().sessions_failed, 1u);
}

TEST_F(GuardTest, AnExceptionInAnOpEndsThatSessionWithAnInternalErrorClose) {
  RawClient sentinel, victim;
  ASSERT_TRUE(sentinel.open_session(port(), next_guard_session++));
  ASSERT_TRUE(victim.open_session(port(), next_guard_session++));
  victim.send_tasks(
      {register_tensor(1, make_data({2}, DTypeKind::F32, {1, 2})),
       register_op(make_op<OpKind::NumericFloat_MulScalar>(
           ScalarOpIr{tir(1, {2}), ScalarIr::f(kThrowingScalar), out(2, {2})}, DTypeKind::F32)),
       ReadTensorTask{1, stream(), tir(2, {2})}});
  const auto end = victim.read(10s);
  ASSERT_TRUE(end.closed()) << end.ec.message();
  EXPECT_EQ(end.close_code, 1011);
  EXPECT_THAT(end.close_reason, HasSubstr("an injected bug"));
  expect_computes(sentinel, 3);
  EXPECT_TRUE(eventually([&] { return host_->metrics().sessions_open == 1; }));
}

TEST_F(GuardTest, OutOfMemoryInAReadIsAnErrorForThatReadAndTheSessionGoesOn) {
  RawClient c;
  ASSERT_TRUE(c.open_session(port(), next_guard_session++));
  c.send_tasks({register_tensor(kBadAllocId, make_data({2}, DTypeKind::F32, {1, 2})),
                ReadTensorTask{7, stream(), tir(kBadAllocId, {2})}});
  auto r = c.response(10s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 7u);
  const auto& result = std::get<ReadTensorResponse>(r->content).result;
  ASSERT_TRUE(std::holds_alternative<ExecutionError>(result));
  EXPECT_THAT(std::get<ExecutionError>(result).reason, HasSubstr("ran out of memory"));
  expect_computes(c, 5);
}

TEST_F(GuardTest, AnExceptionMakingTheSessionsExecutorEndsThatSessionOnly) {
  RawClient sentinel;
  ASSERT_TRUE(sentinel.open_session(port(), next_guard_session++));
  expect_computes(sentinel, 6);  // its executor exists before the fault is armed
  faults_.new_executor = true;
  RawClient victim;
  victim.open_session(port(), next_guard_session++);
  const auto end = victim.read(10s);
  EXPECT_TRUE(end.ended());
  faults_.new_executor = false;
  expect_computes(sentinel, 7);
}

}  // namespace
}  // namespace tb::test
