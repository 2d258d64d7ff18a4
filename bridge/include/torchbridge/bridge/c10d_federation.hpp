// Joining a federation on torch.distributed's c10d: members meet through a store (rank 0 serves
// it), publish their address and devices there, and reduce across members on ProcessGroupGloo
// groups, one per device set. Built where LibTorch ships c10d with Gloo (Debian's libtorch-dev with
// libgloo-dev); elsewhere join_federation answers with an error saying so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "torchbridge/bridge/federation.hpp"

namespace tb::bridge {

struct FederationOptions {
  // The store members meet at (bridge/federation/store_server.hpp); rank 0 listens on it. Without
  // a token it must be a loopback address.
  std::string store_host = "127.0.0.1";
  std::uint16_t store_port = 29500;
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  // Where this member serves sessions (ws://host:port): the other members relay to it, and its
  // host part names the interface Gloo binds.
  std::string address;
  std::vector<std::string> device_names;
  // The host's token: it signs this member's record and is checked on every other member's.
  std::optional<std::string> token;
  // How long to wait for the other members to join (and to be ready).
  std::chrono::milliseconds timeout{120000};
};

class C10dFederation : public Federation {
 public:
  // Barrier after this member's host listens: returns once every member's host does.
  virtual Status wait_ready() = 0;
};

// Whether this build has c10d with Gloo.
bool federation_supported();

// Joins the federation (blocks until every member has published its record, or the timeout).
// Refused: a rank that has joined before (a restarted or duplicate member), a record signed with
// another token, a world size that differs between members.
Result<std::shared_ptr<C10dFederation>> join_federation(const FederationOptions& options);

}  // namespace tb::bridge
