// One member of a federation on c10d (c10d_member.hpp): links between members as
// ProcessGroupGloo groups, one per device or session set, and where transfers and sessions are,
// through the store. Every c10d and store call goes through `guarded` (c10d_guard.hpp).
#include "c10d_member.hpp"

#ifdef TB_HAVE_C10D_GLOO

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "c10d_guard.hpp"
#include "member_record.hpp"

namespace tb::bridge {

namespace {

Result<at::ScalarType> scalar_type(const ir::DType& dtype) {
  switch (dtype.kind) {
    case ir::DTypeKind::F64:
      return at::kDouble;
    case ir::DTypeKind::F32:
      return at::kFloat;
    case ir::DTypeKind::F16:
      return at::kHalf;
    case ir::DTypeKind::BF16:
      return at::kBFloat16;
    default:
      return make_error(ErrorCode::kUnsupported,
                        "a cross-member all-reduce of {} tensors: only float dtypes are reduced",
                        dtype.name());
  }
}

class C10dMember final : public C10dFederation {
 public:
  C10dMember(FederationOptions options, std::unique_ptr<store::Server> server,
             c10::intrusive_ptr<store::Client> store, c10::intrusive_ptr<store::Client> transfers,
             std::vector<FederationMember> members, std::string transfer_secret)
      : server_(std::move(server)),
        options_(std::move(options)),
        store_(std::move(store)),
        transfers_(std::move(transfers)),
        members_(std::move(members)),
        transfer_secret_(std::move(transfer_secret)) {}

  std::uint32_t rank() const override { return options_.rank; }
  const std::string& transfer_secret() const override { return transfer_secret_; }
  const std::vector<FederationMember>& members() const override { return members_; }

  Status wait_ready() override {
    std::vector<std::string> keys;
    for (std::uint32_t r = 0; r < options_.world_size; ++r) {
      keys.push_back(fmt::format("tb/ready/{}", r));
    }
    return guarded(ErrorCode::kTimeout, "federation: not every member became ready", [&] {
      store_->set(fmt::format("tb/ready/{}", options_.rank), std::vector<std::uint8_t>{1});
      store_->wait(keys, options_.timeout);
    });
  }

  Result<ir::TensorData> sum_across(const std::vector<std::uint32_t>& ranks, const std::string& key,
                                    std::uint64_t round, const ir::TensorData& data,
                                    std::chrono::milliseconds timeout,
                                    const std::vector<std::uint64_t>& bound_to) override {
    std::unique_lock lock(mutex_);
    if (stopping_) return make_error(ErrorCode::kIo, "the host is stopping");
    auto it = groups_.find(key);
    if (it == groups_.end()) {
      if (groups_.size() >= kMaxGroups) {
        return make_error(ErrorCode::kLimit,
                          "all-reduce across members over {} distinct device or session sets, "
                          "the most this host keeps links for",
                          kMaxGroups);
      }
      it = groups_.emplace(key, std::make_shared<Group>()).first;
      it->second->bound_to = bound_to;
    }
    // Held by this call: a session ending may drop the group from the map meanwhile.
    const std::shared_ptr<Group> held = it->second;
    Group& group = *held;
    if (group.round == round && group.result) return *group.result;
    if (group.round == round && !group.running && group.error) {
      return make_error(ErrorCode::kIo, "{}", *group.error);
    }
    if (group.round == round && group.running) {
      done_.wait_for(lock, timeout,
                     [&] { return stopping_ || !group.running || group.round != round; });
      if (group.round == round && group.result) return *group.result;
      if (group.error) return make_error(ErrorCode::kIo, "{}", *group.error);
      return make_error(stopping_ ? ErrorCode::kIo : ErrorCode::kTimeout, "{}",
                        stopping_
                            ? std::string("the host is stopping")
                            : fmt::format("no result of the round within {} ms", timeout.count()));
    }
    // One round at a time on a group: its ops must reach Gloo in the same order on every member.
    if (!done_.wait_for(lock, timeout, [&] { return stopping_ || !group.running; })) {
      return make_error(ErrorCode::kTimeout,
                        "all-reduce across members ({}): the previous round took over {} ms", key,
                        timeout.count());
    }
    if (stopping_) return make_error(ErrorCode::kIo, "the host is stopping");
    if (group.round == round && group.result) return *group.result;
    // A new round: the last one's result is no longer wanted (every local caller took it before
    // any of them could start this one).
    group.round = round;
    group.running = true;
    group.result.reset();
    group.error.reset();
    auto pg = group.pg;
    std::int64_t incarnation = group.incarnation;
    lock.unlock();
    auto result = reduce(pg, incarnation, ranks, key, data, timeout);
    // A part this member refused (a dtype) leaves the link as it was; a link that failed is over.
    const bool link_failed = !result && (result.error().code == ErrorCode::kIo ||
                                         result.error().code == ErrorCode::kTimeout);
    if (link_failed) retire(key, incarnation);
    lock.lock();
    group.running = false;
    group.pg = link_failed ? c10::intrusive_ptr<c10d::ProcessGroupGloo>() : pg;
    group.incarnation = incarnation;
    if (result) {
      group.result = result.value();
    } else {
      group.error = result.error().what();
    }
    done_.notify_all();
    return result;
  }

  Status announce_transfer(std::uint64_t key) override {
    auto s = publish_rank(fmt::format("tb/xfer/{:016x}", key));
    if (!s) {
      return make_error(ErrorCode::kIo, "federation: cannot announce transfer {:#018x}: {}", key,
                        s.error().what());
    }
    return ok();
  }

  Result<std::uint32_t> locate_transfer(std::uint64_t key,
                                        std::chrono::milliseconds timeout) override {
    auto rank = poll_rank(fmt::format("tb/xfer/{:016x}", key), timeout, true);
    if (!rank) {
      return make_error(ErrorCode::kTimeout,
                        "no member exposed the transfer within {} ms (or the federation's store "
                        "is gone): {}",
                        timeout.count(), rank.error().what());
    }
    return rank;
  }

  void announce_session(std::uint64_t session) override {
    if (auto s = publish_rank(fmt::format("tb/session/{:016x}", session)); !s) {
      spdlog::warn("federation: cannot announce session {:016x}: {}", session, s.error().what());
    }
  }

  void session_ended(std::uint64_t session) override {
    {
      // Its collectives' links can serve no other collective: a key names its sessions.
      std::lock_guard lock(mutex_);
      for (auto it = groups_.begin(); it != groups_.end();) {
        const auto& b = it->second->bound_to;
        it = std::find(b.begin(), b.end(), session) != b.end() ? groups_.erase(it) : std::next(it);
      }
    }
    const std::string name = fmt::format("tb/session/{:016x}", session);
    const auto forgotten = guarded(ErrorCode::kIo, "federation: cannot forget " + name,
                                   [&] { transfers_->deleteKey(name); });
    if (!forgotten) spdlog::debug("{}", forgotten.error().what());
  }

  Result<std::uint32_t> locate_session(std::uint64_t session,
                                       std::chrono::milliseconds timeout) override {
    auto rank = poll_rank(fmt::format("tb/session/{:016x}", session), timeout, false);
    if (!rank) {
      return make_error(ErrorCode::kTimeout,
                        "session {:016x} is on no member of the federation (waited {} ms): {}",
                        session, timeout.count(), rank.error().what());
    }
    return rank;
  }

  void shutdown() override {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    done_.notify_all();
  }

 private:
  static constexpr std::size_t kMaxGroups = 64;

  // Stores this member's rank under `name` (where a transfer or a session is).
  Status publish_rank(const std::string& name) {
    const std::string rank = std::to_string(options_.rank);
    return guarded(ErrorCode::kIo, "storing " + name, [&] {
      transfers_->set(name, std::vector<std::uint8_t>(rank.begin(), rank.end()));
    });
  }

  // The rank stored under `name`, once it is there (then deleted when `take`). Polled with short
  // queries on a connection of their own: a store client runs one query at a time, and a long
  // wait would hold up the links being built and the other lookups.
  Result<std::uint32_t> poll_rank(const std::string& name, std::chrono::milliseconds timeout,
                                  bool take) {
    return guarded(ErrorCode::kIo, "looking up " + name, [&]() -> Result<std::uint32_t> {
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      // Each query is bounded by the lookup's timeout too, not the store's (the join's).
      const auto store = transfers_->scoped(std::max(timeout, std::chrono::milliseconds(1)));
      auto pause = std::chrono::milliseconds(1);
      while (!store->check({name})) {
        {
          std::lock_guard lock(mutex_);
          if (stopping_) return make_error(ErrorCode::kIo, "the host is stopping");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
          return make_error(ErrorCode::kTimeout, "timed out");
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(20));
      }
      const auto value = store->get(name);
      if (take) store->deleteKey(name);
      return parse_rank(std::string_view(reinterpret_cast<const char*>(value.data()), value.size()),
                        static_cast<std::uint32_t>(members_.size()));
    });
  }

  struct Group {
    std::vector<std::uint64_t> bound_to;
    c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
    std::int64_t incarnation = 0;
    std::uint64_t round = UINT64_MAX;
    bool running = false;
    std::optional<ir::TensorData> result;
    std::optional<std::string> error;
  };

  // A failed link is not used again. Its members agree on the next one through the store: the
  // first member to report incarnation k's failure makes k + 1 current, and a member building a
  // link takes the current incarnation, so one that saw nothing fail builds the same one.
  void retire(const std::string& key, std::int64_t incarnation) {
    const auto reported =
        guarded(ErrorCode::kIo, "federation: cannot report a failed link to the store", [&] {
          if (store_->add(fmt::format("tb/pg/{}/failed/{}", key, incarnation), 1) == 1) {
            store_->add(fmt::format("tb/pg/{}/incarnation", key), 1);
          }
        });
    if (!reported) spdlog::warn("{}", reported.error().what());
  }

  Result<ir::TensorData> reduce(c10::intrusive_ptr<c10d::ProcessGroupGloo>& pg,
                                std::int64_t& incarnation, const std::vector<std::uint32_t>& ranks,
                                const std::string& key, const ir::TensorData& data,
                                std::chrono::milliseconds timeout) {
    TB_TRY_ASSIGN(const at::ScalarType type, scalar_type(data.dtype));
    std::vector<std::int64_t> dims(data.shape.begin(), data.shape.end());
    const std::string context =
        fmt::format("all-reduce across members [{}] ({})", fmt::join(ranks, ", "), key);
    if (!pg) {
      const auto me = std::find(ranks.begin(), ranks.end(), options_.rank);
      if (me == ranks.end()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "all-reduce across members [{}]: this member ({}) is not among them",
                          fmt::join(ranks, ", "), options_.rank);
      }
      // `pg` is assigned last: a step that throws leaves it empty.
      TB_TRY(guarded(ErrorCode::kIo, context + ": connecting the members", [&] {
        incarnation = store_->add(fmt::format("tb/pg/{}/incarnation", key), 0);
        // Gloo's rendezvous waits on the store: bounded by this all-reduce's timeout.
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
            fmt::format("tb/pg/{}/{}", key, incarnation), store_->scoped(timeout));
        auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(gloo_host()));
        pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
            prefixed, static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()), opts);
      }));
    }
    return guarded(ErrorCode::kIo, context + ": reducing", [&]() -> Result<ir::TensorData> {
      at::Tensor t = at::from_blob(const_cast<std::uint8_t*>(data.bytes.data()), dims,
                                   at::TensorOptions().dtype(type))
                         .clone();
      // Gloo in LibTorch 1.13 has no bfloat16 sum: it is summed in float32, rounded once.
      const bool widen = type == at::kBFloat16 && !gloo_bfloat16();
      std::vector<at::Tensor> tensors{widen ? t.to(at::kFloat) : t};
      auto work = pg->allreduce(tensors);
      if (!work->wait(timeout)) {
        return make_error(ErrorCode::kTimeout, "{}: no answer in {} ms", context, timeout.count());
      }
      at::Tensor sum = widen ? tensors[0].to(type).contiguous() : tensors[0];
      auto owner = std::make_shared<at::Tensor>(sum);
      ir::TensorData out;
      out.shape = data.shape;
      out.dtype = data.dtype;
      out.bytes = ir::Bytes(owner, static_cast<const std::uint8_t*>(owner->data_ptr()),
                            static_cast<std::size_t>(owner->nbytes()));
      return out;
    });
  }

  static bool gloo_bfloat16() {
#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
    return true;
#else
    return false;
#endif
  }

  // The host part of this member's address: Gloo listens on that interface.
  std::string gloo_host() const {
    std::string host = options_.address;
    if (const auto p = host.find("://"); p != std::string::npos) host = host.substr(p + 3);
    if (!host.empty() && host.front() == '[') return host.substr(1, host.find(']') - 1);
    return host.substr(0, host.rfind(':'));
  }

  const std::unique_ptr<store::Server> server_;  // rank 0's; destroyed after everything using it
  const FederationOptions options_;
  c10::intrusive_ptr<store::Client> store_;
  c10::intrusive_ptr<store::Client> transfers_;  // the same store, a connection for transfers
  const std::vector<FederationMember> members_;
  const std::string transfer_secret_;
  std::mutex mutex_;
  std::condition_variable done_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Group>> groups_;
};

}  // namespace

std::shared_ptr<C10dFederation> make_c10d_member(FederationOptions options,
                                                 std::unique_ptr<store::Server> server,
                                                 c10::intrusive_ptr<store::Client> store,
                                                 c10::intrusive_ptr<store::Client> transfers,
                                                 std::vector<FederationMember> members,
                                                 std::string transfer_secret) {
  return std::make_shared<C10dMember>(std::move(options), std::move(server), std::move(store),
                                      std::move(transfers), std::move(members),
                                      std::move(transfer_secret));
}

}  // namespace tb::bridge

#endif  // TB_HAVE_C10D_GLOO
