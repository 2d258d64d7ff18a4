// A member of a federation once it has joined (c10d_federation.cpp joins): what the host calls
// through C10dFederation, on c10d's Gloo groups and the federation's store.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "store_client.hpp"
#include "store_server.hpp"
#include "torchbridge/bridge/c10d_federation.hpp"

namespace tb::bridge {

// `server` is rank 0's store (null elsewhere); `store` and `transfers` are two connections to it
// (one for links and records, one for the short lookups of transfers and sessions).
std::shared_ptr<C10dFederation> make_c10d_member(FederationOptions options,
                                                 std::unique_ptr<store::Server> server,
                                                 c10::intrusive_ptr<store::Client> store,
                                                 c10::intrusive_ptr<store::Client> transfers,
                                                 std::vector<FederationMember> members,
                                                 std::string transfer_secret);

}  // namespace tb::bridge
