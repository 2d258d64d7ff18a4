// The federation on c10d. Every c10d call is made here, inside try blocks: c10d reports failures
// (a store that does not answer, a peer that went away, a timeout) by throwing.
#include "torchbridge/bridge/c10d_federation.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "member_record.hpp"
#include "net/tls.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#ifdef TB_HAVE_C10D_GLOO
#include <ATen/ATen.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "store_client.hpp"
#include "store_server.hpp"
#endif

namespace tb::bridge {

#ifndef TB_HAVE_C10D_GLOO

bool federation_supported() {
  return false;
}

Result<std::shared_ptr<C10dFederation>> join_federation(const FederationOptions&) {
  return make_error(ErrorCode::kUnsupported,
                    "this torchbridge was built without c10d's Gloo process group (its LibTorch "
                    "lacks it, or Gloo's headers were not found): it cannot join a federation");
}

#else

bool federation_supported() {
  return true;
}

namespace {

// c10d's messages carry a C++ backtrace after their first line.
std::string first_line(const std::exception& e) {
  const std::string what = e.what();
  return what.substr(0, what.find('\n'));
}

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
    try {
      store_->set(fmt::format("tb/ready/{}", options_.rank), std::vector<std::uint8_t>{1});
      std::vector<std::string> keys;
      for (std::uint32_t r = 0; r < options_.world_size; ++r) {
        keys.push_back(fmt::format("tb/ready/{}", r));
      }
      store_->wait(keys, options_.timeout);
      return ok();
    } catch (const std::exception& e) {
      return make_error(ErrorCode::kTimeout, "federation: not every member became ready: {}",
                        first_line(e));
    }
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
    try {
      transfers_->deleteKey(fmt::format("tb/session/{:016x}", session));
    } catch (const std::exception& e) {
      spdlog::debug("federation: cannot forget session {:016x}: {}", session, first_line(e));
    }
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
    try {
      const std::string rank = std::to_string(options_.rank);
      transfers_->set(name, std::vector<std::uint8_t>(rank.begin(), rank.end()));
      return ok();
    } catch (const std::exception& e) {
      return make_error(ErrorCode::kIo, "{}", first_line(e));
    }
  }

  // The rank stored under `name`, once it is there (then deleted when `take`). Polled with short
  // queries on a connection of their own: a store client runs one query at a time, and a long
  // wait would hold up the links being built and the other lookups.
  Result<std::uint32_t> poll_rank(const std::string& name, std::chrono::milliseconds timeout,
                                  bool take) {
    try {
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
    } catch (const std::exception& e) {
      return make_error(ErrorCode::kIo, "{}", first_line(e));
    }
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
    try {
      if (store_->add(fmt::format("tb/pg/{}/failed/{}", key, incarnation), 1) == 1) {
        store_->add(fmt::format("tb/pg/{}/incarnation", key), 1);
      }
    } catch (const std::exception& e) {
      spdlog::warn("federation: cannot report a failed link to the store: {}", first_line(e));
    }
  }

  Result<ir::TensorData> reduce(c10::intrusive_ptr<c10d::ProcessGroupGloo>& pg,
                                std::int64_t& incarnation, const std::vector<std::uint32_t>& ranks,
                                const std::string& key, const ir::TensorData& data,
                                std::chrono::milliseconds timeout) {
    TB_TRY_ASSIGN(const at::ScalarType type, scalar_type(data.dtype));
    std::vector<std::int64_t> dims(data.shape.begin(), data.shape.end());
    const auto context = [&](std::string_view stage, const std::exception& e) {
      return make_error(ErrorCode::kIo, "all-reduce across members [{}] ({}): {}: {}",
                        fmt::join(ranks, ", "), key, stage, first_line(e));
    };
    if (!pg) {
      const auto me = std::find(ranks.begin(), ranks.end(), options_.rank);
      if (me == ranks.end()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "all-reduce across members [{}]: this member ({}) is not among them",
                          fmt::join(ranks, ", "), options_.rank);
      }
      try {
        incarnation = store_->add(fmt::format("tb/pg/{}/incarnation", key), 0);
        // Gloo's rendezvous waits on the store: bounded by this all-reduce's timeout.
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
            fmt::format("tb/pg/{}/{}", key, incarnation), store_->scoped(timeout));
        auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(gloo_host()));
        pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
            prefixed, static_cast<int>(me - ranks.begin()), static_cast<int>(ranks.size()), opts);
      } catch (const std::exception& e) {
        pg.reset();
        return context("connecting the members", e);
      }
    }
    try {
      at::Tensor t = at::from_blob(const_cast<std::uint8_t*>(data.bytes.data()), dims,
                                   at::TensorOptions().dtype(type))
                         .clone();
      // Gloo in LibTorch 1.13 has no bfloat16 sum: it is summed in float32, rounded once.
      const bool widen = type == at::kBFloat16 && !gloo_bfloat16();
      std::vector<at::Tensor> tensors{widen ? t.to(at::kFloat) : t};
      auto work = pg->allreduce(tensors);
      if (!work->wait(timeout)) {
        return make_error(ErrorCode::kTimeout,
                          "all-reduce across members [{}] ({}): no answer in {} ms",
                          fmt::join(ranks, ", "), key, timeout.count());
      }
      at::Tensor sum = widen ? tensors[0].to(type).contiguous() : tensors[0];
      auto owner = std::make_shared<at::Tensor>(sum);
      ir::TensorData out;
      out.shape = data.shape;
      out.dtype = data.dtype;
      out.bytes = ir::Bytes(owner, static_cast<const std::uint8_t*>(owner->data_ptr()),
                            static_cast<std::size_t>(owner->nbytes()));
      return out;
    } catch (const std::exception& e) {
      return context("reducing", e);
    }
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

// The members' transfer secret (Federation::transfer_secret). With a token it is derived from the
// token and never crosses the network; without one, rank 0 draws 32 random bytes and the others
// read them from the store, which then holds the only copy a stranger could reach (bind it to a
// private address: docs/federation.md).
Result<std::string> shared_transfer_secret(c10d::Store& store, const FederationOptions& options) {
  std::string secret(32, '\0');
  if (options.token) {
    static constexpr std::string_view kLabel = "torchbridge federation transfer keys";
    unsigned int n = 0;
    HMAC(EVP_sha256(), options.token->data(), static_cast<int>(options.token->size()),
         reinterpret_cast<const unsigned char*>(kLabel.data()), kLabel.size(),
         reinterpret_cast<unsigned char*>(secret.data()), &n);
    return secret;
  }
  try {
    const std::string key = "tb/transfer-secret";
    if (options.rank == 0) {
      if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()), 32) != 1) {
        return make_error(ErrorCode::kInternal, "federation: no random bytes for the secret");
      }
      store.set(key, std::vector<std::uint8_t>(secret.begin(), secret.end()));
      return secret;
    }
    store.wait({key}, options.timeout);
    const auto bytes = store.get(key);
    if (bytes.size() != 32) {
      return make_error(ErrorCode::kInvalidArgument, "federation: the store's secret is malformed");
    }
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kTimeout, "federation: the transfer secret: {}", first_line(e));
  }
}

Result<std::shared_ptr<C10dFederation>> join_federation(const FederationOptions& options) {
  if (options.world_size == 0 || options.rank >= options.world_size) {
    return make_error(ErrorCode::kInvalidArgument,
                      "federation: rank {} of a federation of {} member(s)", options.rank,
                      options.world_size);
  }
  if (options.device_names.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "federation: a member serves no device");
  }
  // Without a token the store's key is public (store_protocol.hpp): whoever reaches the store
  // joins it, so it may only be reachable from this machine.
  if (!options.token && !tb::net::is_loopback(options.store_host)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "federation: the store at {}:{} is not on a loopback address, and without "
                      "--auth-token-file anyone who reaches it could write the federation's "
                      "records; give every member the same token file",
                      options.store_host, options.store_port);
  }
  std::unique_ptr<store::Server> server;
  if (options.rank == 0) {
    TB_TRY_ASSIGN(server,
                  store::Server::start(options.store_host, options.store_port, options.token));
  }
  auto store = c10::make_intrusive<store::Client>(options.store_host, options.store_port,
                                                  options.token, options.timeout);
  auto transfers = c10::make_intrusive<store::Client>(options.store_host, options.store_port,
                                                      options.token, options.timeout);
  std::vector<FederationMember> members(options.world_size);
  try {
    // A rank joins once: a member that comes back (or a second process given the same rank) is
    // refused, because the others' links to the first one cannot be taken over.
    if (store->add(fmt::format("tb/joined/{}", options.rank), 1) != 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        "federation: rank {} has already joined this federation (a restarted "
                        "member, or two members given one rank); restart every member to form a "
                        "new federation",
                        options.rank);
    }
    FederationMember me;
    me.rank = options.rank;
    me.address = options.address;
    me.device_count = static_cast<std::uint32_t>(options.device_names.size());
    me.device_names = options.device_names;
    TB_TRY_ASSIGN(const std::string record,
                  encode_member_record(me, options.world_size, options.token));
    store->set(fmt::format("tb/member/{}", options.rank),
               std::vector<std::uint8_t>(record.begin(), record.end()));
    std::uint32_t first = 0;
    for (std::uint32_t r = 0; r < options.world_size; ++r) {
      const std::string key = fmt::format("tb/member/{}", r);
      store->wait({key}, options.timeout);
      const auto bytes = store->get(key);
      TB_TRY_ASSIGN(members[r], decode_member_record(std::string(bytes.begin(), bytes.end()), r,
                                                     options.world_size, options.token));
      members[r].first_device = first;
      first += members[r].device_count;
    }
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kTimeout,
                      "federation: not every one of the {} members joined within {} ms: {}",
                      options.world_size, options.timeout.count(), first_line(e));
  }
  TB_TRY_ASSIGN(std::string secret, shared_transfer_secret(*store, options));
  return std::shared_ptr<C10dFederation>(
      std::make_shared<C10dMember>(options, std::move(server), std::move(store),
                                   std::move(transfers), std::move(members), std::move(secret)));
}

#endif

}  // namespace tb::bridge
