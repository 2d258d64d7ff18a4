// Our C++ client against our host and against Burn's own server (Flex with its default features),
// in one run, interleaved: the read round trip and transfers, with raw loopback TCP as the
// ceiling. Burn's Rust client serialises every upload through serde and masks it byte by byte;
// this client shows what the hosts themselves allow.
//
//   tb_bench_client --torchbridge BIN --reference BIN [--reps N] [--quick] [--threads N]
//                   [--host-cpus LIST] [--sizes MIB,...] [--reads N]
//                   [--out FILE]
//
// Writes a JSON object: per host the medians with their spread, and the ratios scripts/bench
// reports (`client_read_roundtrip_us`, `client_transfer_vs_raw_tcp`).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "child_server.hpp"
#include "torchbridge/client/client.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using tb::client::Device;
using tb::client::Tensor;
constexpr std::size_t kMiB = std::size_t{1} << 20;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "tb_bench_client: %s\n", why.c_str());
  std::exit(1);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const auto hi = static_cast<std::size_t>(std::ceil(at));
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

std::string summary(const std::vector<double>& v, double unit) {
  return fmt::format(
      R"({{"median": {:.6g}, "p25": {:.6g}, "p75": {:.6g}, "min": {:.6g}, "max": {:.6g}, "n": {}}})",
      quantile(v, 0.5) * unit, quantile(v, 0.25) * unit, quantile(v, 0.75) * unit,
      quantile(v, 0.0) * unit, quantile(v, 1.0) * unit, v.size());
}

// One upload then download of `values`; the bytes must come back unchanged.
double transfer(const Device& device, const std::vector<float>& values) {
  const auto start = Clock::now();
  auto back = Tensor::from_vector(device, values).to_vector<float>();
  const double s = seconds_since(start);
  if (!back) die("transfer failed: " + back.error().what());
  if (back.value() != values) die("a transfer came back changed");
  return s;
}

// Seconds per read of a 4-element tensor already on the device.
std::vector<double> reads(const Device& device, int n) {
  const auto t = Tensor::from_vector<float>(device, {1, 2, 3, 4});
  if (!t.to_data()) die("cannot read a resident tensor");
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    const auto start = Clock::now();
    auto d = t.to_data();
    out.push_back(seconds_since(start));
    if (!d) die("read failed: " + d.error().what());
  }
  return out;
}

// `bytes` to a loopback peer and back (it reads all, then answers): the two copies of an upload
// plus a download over the same socket path, without any protocol.
double raw_tcp_round_trip(std::size_t bytes) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    die("raw TCP: cannot listen");
  }
  const auto pump = [](int fd, char* p, std::size_t n, bool send) {
    while (n > 0) {
      const auto k = send ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
      if (k <= 0) die("raw TCP: connection lost");
      p += k;
      n -= static_cast<std::size_t>(k);
    }
  };
  const int one = 1;
  std::thread peer([&] {
    const int s = ::accept(listener, nullptr, nullptr);
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> buf(bytes);
    pump(s, buf.data(), bytes, false);
    pump(s, buf.data(), bytes, true);
    ::close(s);
  });
  std::vector<char> payload(bytes, 0x5a), back(bytes);
  const int c = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("raw TCP: connect");
  ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const auto start = Clock::now();
  pump(c, payload.data(), bytes, true);
  pump(c, back.data(), bytes, false);
  const double s = seconds_since(start);
  peer.join();
  ::close(c);
  ::close(listener);
  if (back != payload) die("raw TCP changed the bytes");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ours_bin, reference_bin, out_path, threads, host_cpus, sizes_mib;
  int reps = 7;
  int n_reads = -1;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--torchbridge")
      ours_bin = value();
    else if (a == "--reference")
      reference_bin = value();
    else if (a == "--reps")
      reps = std::atoi(value().c_str());
    else if (a == "--quick")
      quick = true;
    else if (a == "--threads")
      threads = value();
    else if (a == "--host-cpus")
      host_cpus = value();
    else if (a == "--out")
      out_path = value();
    else if (a == "--sizes")
      sizes_mib = value();
    else if (a == "--reads")
      n_reads = std::atoi(value().c_str());
    else
      die("unknown argument " + a);
  }
  if (ours_bin.empty() || reference_bin.empty()) die("--torchbridge BIN and --reference BIN");
  const auto command = [&](std::vector<std::string> argv) {
    if (!host_cpus.empty()) argv.insert(argv.begin(), {"taskset", "-c", host_cpus});
    return argv;
  };
  std::vector<std::string> ours_argv{
      ours_bin, "serve", "--port", "0", "--log-level", "warn", "--exit-on-stdin-eof"};
  if (!threads.empty()) ours_argv.insert(ours_argv.end(), {"--threads", threads});
  tb::test::ChildServer ours(command(ours_argv));
  tb::test::ChildServer reference(command({reference_bin, "--port", "0", "--exit-on-stdin-eof"}));
  const tb::test::ChildServer* servers[] = {&ours, &reference};
  const char* names[] = {"torchbridge", "burn"};
  std::vector<Device> devices;
  for (const auto* s : servers) {
    if (!s->ok()) die(s->error());
    auto d = Device::connect(s->address());
    if (!d) die(s->address() + ": " + d.error().what());
    devices.push_back(d.value());
  }

  std::vector<std::size_t> sizes = quick ? std::vector<std::size_t>{kMiB, 16 * kMiB}
                                         : std::vector<std::size_t>{kMiB, 64 * kMiB, 256 * kMiB};
  if (!sizes_mib.empty()) {
    // Profiling one size alone: `--sizes 1` with many repetitions.
    sizes.clear();
    for (std::size_t at = 0; at < sizes_mib.size();) {
      const auto comma = std::min(sizes_mib.find(',', at), sizes_mib.size());
      const long mib = std::atol(sizes_mib.substr(at, comma - at).c_str());
      if (mib <= 0) die("--sizes takes MiB counts such as 1,64");
      sizes.push_back(static_cast<std::size_t>(mib) * kMiB);
      at = comma + 1;
    }
  }
  if (n_reads < 1) n_reads = quick ? 50 : 200;
  std::vector<std::vector<float>> payloads;
  for (const auto b : sizes) {
    std::vector<float> v(b / sizeof(float));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000) * 0.25f;
    payloads.push_back(std::move(v));
  }
  // Warm-up: every transfer once on each host.
  for (const auto& d : devices)
    for (const auto& p : payloads) transfer(d, p);

  std::vector<double> read_s[2];
  std::vector<std::vector<double>> transfer_s[2];
  std::vector<std::vector<double>> raw_s(sizes.size());
  for (auto& t : transfer_s) t.resize(sizes.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k < 2; ++k) {
      const int h = (rep + k) % 2;
      auto r = reads(devices[h], n_reads);
      read_s[h].insert(read_s[h].end(), r.begin(), r.end());
      for (std::size_t i = 0; i < sizes.size(); ++i)
        transfer_s[h][i].push_back(transfer(devices[h], payloads[i]));
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) raw_s[i].push_back(raw_tcp_round_trip(sizes[i]));
    std::fprintf(stderr, "tb_bench_client: repetition %d/%d done\n", rep + 1, reps);
  }

  std::string details;
  double log_ratio_sum = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const double b = static_cast<double>(sizes[i]);
    const auto gbps = [&](double s) { return 2 * b / s / 1e9; };
    const double ours_g = gbps(quantile(transfer_s[0][i], 0.5));
    const double burn_g = gbps(quantile(transfer_s[1][i], 0.5));
    const double raw_g = gbps(quantile(raw_s[i], 0.5));
    log_ratio_sum += std::log(ours_g / raw_g);
    details += fmt::format(
        R"("transfer_{}MiB_GBps": {{"torchbridge": {:.4g}, "burn": {:.4g}, "raw_tcp": {:.4g}, )"
        R"("torchbridge_vs_raw": {:.4g}, "burn_vs_raw": {:.4g}, "seconds": {{"torchbridge": {}, )"
        R"("burn": {}, "raw_tcp": {}}}}}, )",
        sizes[i] / kMiB, ours_g, burn_g, raw_g, ours_g / raw_g, burn_g / raw_g,
        summary(transfer_s[0][i], 1), summary(transfer_s[1][i], 1), summary(raw_s[i], 1));
  }
  const double read_ours = quantile(read_s[0], 0.5) * 1e6;
  const double read_burn = quantile(read_s[1], 0.5) * 1e6;
  const std::string json = fmt::format(
      R"({{"client_read_roundtrip_us": {:.4g}, "client_read_roundtrip_vs_burn": {:.4g}, )"
      R"("client_transfer_vs_raw_tcp": {:.4g}, "details": {{{})"
      R"("read_roundtrip_us": {{"torchbridge": {}, "burn": {}}}}}, )"
      R"("config": {{"reps": {}, "reads_per_rep": {}, "host_cpus": "{}", "hosts": ["{}", "{}"]}}}})"
      "\n",
      read_ours, read_ours / read_burn, std::exp(log_ratio_sum / static_cast<double>(sizes.size())),
      details, summary(read_s[0], 1e6), summary(read_s[1], 1e6), reps, n_reads, host_cpus, names[0],
      names[1]);
  if (out_path.empty()) {
    std::fputs(json.c_str(), stdout);
  } else {
    std::ofstream(out_path) << json;
  }
  return 0;
}
