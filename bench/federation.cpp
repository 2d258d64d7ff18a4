// tb_bench_federation: the all-reduce across federation members (docs/federation.md) against Burn
// 0.23's emulation of a cross-host all-reduce, on the same Gloo links over loopback.
//
// - ours: Federation::sum_across, the path a Distributed.AllReduce takes between members (a ring
//   all-reduce on c10d's ProcessGroupGloo: each link carries 2(N-1)/N of the tensor).
// - centralised: what Burn 0.23 does across hosts: every part goes to the first member, which
//   sums them and sends the sum back to each (the root's link carries 2(N-1) tensors).
//
// Members are threads of this process, each with its own store client and Gloo links, so every
// byte still crosses loopback TCP. Prints one JSON object per line: members, MiB, median seconds
// of each path over the repetitions, and the ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <boost/asio.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "torchbridge/bridge/c10d_federation.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::uint16_t free_port() {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor a(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Every member runs `fn(rank)` at once; the time of the slowest.
template <class Fn>
double timed(std::uint32_t members, Fn fn) {
  const auto start = Clock::now();
  std::vector<std::future<void>> all;
  for (std::uint32_t r = 0; r < members; ++r) {
    all.push_back(std::async(std::launch::async, [&fn, r] { fn(r); }));
  }
  for (auto& f : all) f.get();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  at::set_num_threads(1);
  for (const std::uint32_t members : {2u, 3u}) {
    // Ours: members of a federation.
    const std::uint16_t port = free_port();
    std::vector<std::future<tb::Result<std::shared_ptr<tb::bridge::C10dFederation>>>> joins;
    for (std::uint32_t r = 0; r < members; ++r) {
      tb::bridge::FederationOptions o;
      o.store_port = port;
      o.rank = r;
      o.world_size = members;
      o.address = "ws://127.0.0.1:1";
      o.device_names = {"cpu"};
      joins.push_back(std::async(std::launch::async, [o] { return join_federation(o); }));
    }
    std::vector<std::shared_ptr<tb::bridge::C10dFederation>> fed;
    for (auto& j : joins) {
      auto m = j.get();
      if (!m) {
        std::fprintf(stderr, "%s\n", m.error().what().c_str());
        return 1;
      }
      fed.push_back(m.value());
    }
    std::vector<std::uint32_t> ranks(members);
    for (std::uint32_t r = 0; r < members; ++r) ranks[r] = r;
    // Centralised: a Gloo group of the same members.
    c10d::TCPStoreOptions so;
    so.port = free_port();
    so.isServer = true;
    so.waitWorkers = false;
    auto server = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
    std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>> pgs(members);
    timed(members, [&](std::uint32_t r) {
      auto opts = c10d::ProcessGroupGloo::Options::create(120s);
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      c10d::TCPStoreOptions co = so;
      co.isServer = false;
      auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", co);
      pgs[r] = c10::make_intrusive<c10d::ProcessGroupGloo>(store, r, members, opts);
    });

    std::uint64_t round = 0;
    for (const std::int64_t mib : {1, 16, 256}) {
      const std::int64_t n = mib * (1 << 20) / 4;
      std::vector<at::Tensor> parts;
      std::vector<tb::ir::TensorData> data;
      for (std::uint32_t r = 0; r < members; ++r) {
        parts.push_back(at::rand({n}));
        data.push_back(tb::ir::TensorData{
            tb::ir::Bytes(std::make_shared<at::Tensor>(parts.back()),
                          static_cast<const std::uint8_t*>(parts.back().data_ptr()),
                          static_cast<std::size_t>(parts.back().nbytes())),
            {static_cast<std::uint64_t>(n)},
            tb::ir::DTypeKind::F32});
      }
      std::vector<double> ours, central;
      for (int i = 0; i < reps; ++i) {
        ours.push_back(timed(members, [&](std::uint32_t r) {
          auto s = fed[r]->sum_across(ranks, "bench", round, data[r], 600s);
          if (!s) std::fprintf(stderr, "ours: %s\n", s.error().what().c_str());
        }));
        ++round;
        central.push_back(timed(members, [&](std::uint32_t r) {
          // Every part to the first member, summed there, the sum back to every member.
          std::vector<at::Tensor> in{parts[r].clone()};
          std::vector<std::vector<at::Tensor>> gathered(r == 0 ? 1 : 0);
          if (r == 0) {
            for (std::uint32_t k = 0; k < members; ++k) gathered[0].push_back(at::empty({n}));
          }
          c10d::GatherOptions g;
          g.rootRank = 0;
          pgs[r]->gather(gathered, in, g)->wait();
          at::Tensor sum = r == 0 ? gathered[0][0] : at::empty({n});
          for (std::uint32_t k = 1; r == 0 && k < members; ++k) sum.add_(gathered[0][k]);
          std::vector<at::Tensor> out{sum};
          pgs[r]->broadcast(out)->wait();
        }));
      }
      const double o = median(ours), c = median(central);
      std::printf(
          "{\"members\": %u, \"mib\": %ld, \"ours_s\": %.4f, \"centralised_s\": %.4f, "
          "\"ours_vs_centralised\": %.3f, \"ours_gib_per_s\": %.2f}\n",
          members, static_cast<long>(mib), o, c, o / c, mib / 1024.0 / o);
      std::fflush(stdout);
    }
  }
  return 0;
}
