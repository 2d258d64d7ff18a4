// Joining a federation on c10d: rank 0 serves the store, every member publishes its record and
// reads the others', and the member (c10d_member.cpp) takes over. Every store call goes through
// `guarded` (c10d_guard.hpp), the federation's one error boundary.
#include "torchbridge/bridge/c10d_federation.hpp"

#include <fmt/format.h>

#include "member_record.hpp"
#include "net/tls.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#ifdef TB_HAVE_C10D_GLOO
#include "c10d_guard.hpp"
#include "c10d_member.hpp"
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

// The members' transfer secret (Federation::transfer_secret). With a token it is derived from the
// token and never crosses the network; without one (a store on loopback only), rank 0 draws 32
// random bytes and the others read them from the store.
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
  const std::string key = "tb/transfer-secret";
  if (options.rank == 0) {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(secret.data()), 32) != 1) {
      return make_error(ErrorCode::kInternal, "federation: no random bytes for the secret");
    }
    TB_TRY(guarded(ErrorCode::kIo, "federation: storing the transfer secret", [&] {
      store.set(key, std::vector<std::uint8_t>(secret.begin(), secret.end()));
    }));
    return secret;
  }
  TB_TRY_ASSIGN(const auto bytes,
                guarded(ErrorCode::kTimeout, "federation: the transfer secret", [&] {
                  store.wait({key}, options.timeout);
                  return store.get(key);
                }));
  if (bytes.size() != 32) {
    return make_error(ErrorCode::kInvalidArgument, "federation: the store's secret is malformed");
  }
  return std::string(bytes.begin(), bytes.end());
}

// Publishes this member's record and reads every member's, in rank order. A rank joins once: a
// member that comes back (or a second process given the same rank) is refused, because the others'
// links to the first one cannot be taken over.
Result<std::vector<FederationMember>> exchange_records(c10d::Store& store,
                                                       const FederationOptions& options) {
  const std::string joining =
      fmt::format("federation: not every one of the {} members joined within {} ms",
                  options.world_size, options.timeout.count());
  TB_TRY_ASSIGN(const std::int64_t joined, guarded(ErrorCode::kTimeout, joining, [&] {
                  return store.add(fmt::format("tb/joined/{}", options.rank), 1);
                }));
  if (joined != 1) {
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
  TB_TRY(guarded(ErrorCode::kTimeout, joining, [&] {
    store.set(fmt::format("tb/member/{}", options.rank),
              std::vector<std::uint8_t>(record.begin(), record.end()));
  }));
  std::vector<FederationMember> members(options.world_size);
  std::uint32_t first = 0;
  for (std::uint32_t r = 0; r < options.world_size; ++r) {
    TB_TRY_ASSIGN(const auto bytes, guarded(ErrorCode::kTimeout, joining, [&] {
                    const std::string key = fmt::format("tb/member/{}", r);
                    store.wait({key}, options.timeout);
                    return store.get(key);
                  }));
    TB_TRY_ASSIGN(members[r], decode_member_record(std::string(bytes.begin(), bytes.end()), r,
                                                   options.world_size, options.token));
    members[r].first_device = first;
    first += members[r].device_count;
  }
  return members;
}

}  // namespace

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
  TB_TRY_ASSIGN(auto members, exchange_records(*store, options));
  TB_TRY_ASSIGN(std::string secret, shared_transfer_secret(*store, options));
  return make_c10d_member(options, std::move(server), std::move(store), std::move(transfers),
                          std::move(members), std::move(secret));
}

#endif

}  // namespace tb::bridge
