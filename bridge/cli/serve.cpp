// `torchbridge serve`: from the options to a running host, then the wait for a signal. Each step
// that can refuse to start answers a Result; serve() turns the first failure into its exit code.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "json_text.hpp"
#include "serve_command.hpp"
#include "torchbridge/bridge/c10d_federation.hpp"
#include "torchbridge/bridge/host_malloc.hpp"
#include "torchbridge/decimal.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/libtorch/threads.hpp"
#include "torchbridge/version.hpp"

namespace tb::cli {
namespace {

// Warnings logged after the start-up line, which supervisors read as the first line of output.
std::vector<std::string> thread_warnings(int threads) {
  std::vector<std::string> warnings;
  // Measured on 2 cores (docs/benchmarks.md, thread policy): with the clients on the host's own
  // cores, a thread per CPU made every workload but the MLP slower than 1 thread.
  if (const unsigned cpus = std::thread::hardware_concurrency();
      threads > 1 && cpus > 0 && static_cast<unsigned>(threads) >= cpus) {
    warnings.push_back(fmt::format(
        "--threads {} on a machine with {} CPUs: the network threads and any client on this "
        "machine compete with ATen's threads for them; fewer threads than CPUs measured faster",
        threads, cpus));
  }
  return warnings;
}

// The files the options name, read into the host's options.
Status read_files(ServeArgs& args) {
  if (!args.auth_token_file.empty()) {
    TB_TRY_ASSIGN(args.host.auth_token, read_token_file(args.auth_token_file, "--auth-token-file"));
  }
  if (!args.tls_cert.empty()) args.host.tls_cert_file = args.tls_cert;
  if (!args.tls_key.empty()) args.host.tls_key_file = args.tls_key;
  if (!args.tls_ca.empty()) args.host.tls_ca_file = args.tls_ca;
  return ok();
}

Result<std::vector<std::shared_ptr<backend::Backend>>> make_devices(
    const std::vector<std::string>& names,
    const std::shared_ptr<backend::libtorch::CustomOpRegistry>& registry) {
  std::vector<std::shared_ptr<backend::Backend>> devices;
  for (const auto& name : names.empty() ? std::vector<std::string>{"cpu"} : names) {
    TB_TRY_ASSIGN(auto backend, backend::libtorch::make_backend({name, registry}));
    devices.push_back(std::move(backend));
  }
  return devices;
}

// Joins the federation `args` names, for a host serving `device_names` at `address`.
Result<std::shared_ptr<bridge::C10dFederation>> join(const ServeArgs& args,
                                                     const std::string& address,
                                                     std::vector<std::string> device_names) {
  const auto colon = args.federation.rfind(':');
  const auto port = colon == std::string::npos
                        ? std::nullopt
                        : parse_decimal<std::uint16_t>(args.federation.substr(colon + 1));
  if (!port || *port == 0) {
    return make_error(ErrorCode::kInvalidArgument, "--federation {}: not HOST:PORT",
                      args.federation);
  }
  bridge::FederationOptions f;
  f.store_host = args.federation.substr(0, colon);
  f.store_port = *port;
  f.rank = args.rank;
  f.world_size = args.world_size;
  f.address = args.advertise.empty() ? address : args.advertise;
  f.device_names = std::move(device_names);
  f.token = args.host.auth_token;
  f.timeout = std::chrono::milliseconds(args.federation_timeout_ms);
  spdlog::debug("joining the federation at {} as rank {} of {}", args.federation, args.rank,
                args.world_size);
  return bridge::join_federation(f);
}

std::string address_of(const bridge::HostOptions& options, std::uint16_t port) {
  const bool v6 = options.host.find(':') != std::string::npos;
  return fmt::format("{}://{}:{}", options.tls_cert_file ? "wss" : "ws",
                     v6 ? "[" + options.host + "]" : options.host, port);
}

// "0=cpu, 1=cuda:0 (member 1), ...": every device a client may open, in index order.
std::string device_list(const std::vector<std::shared_ptr<backend::Backend>>& devices,
                        const bridge::C10dFederation* federation) {
  std::string list;
  if (!federation) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      list += fmt::format("{}{}={}", i ? ", " : "", i, devices[i]->device_name());
    }
    return list;
  }
  for (const auto& m : federation->members()) {
    for (std::size_t i = 0; i < m.device_names.size(); ++i) {
      list += fmt::format(
          "{}{}={}{}", m.first_device + i ? ", " : "", m.first_device + i, m.device_names[i],
          m.rank == federation->rank() ? std::string() : fmt::format(" (member {})", m.rank));
    }
  }
  return list;
}

void print_start_line(const std::string& address, const std::string& devices,
                      const std::string& threads, int io_threads, const std::string& models) {
  std::cout
      << fmt::format(
             "torchbridge {} serving {} remote sessions on {} ({}; devices: {}; threads: "
             "{}, io {}; malloc {})\n"
             "Point a Burn program at it:  BURN_DEVICE=remote BURN_REMOTE_ADDRESS={} cargo run\n"
             "(or in code: Device::remote_options(&RemoteHost::websocket(\"{}\")).init()). Ctrl-C "
             "stops the host.\n",
             kVersion, ir::describe_served(), address, backend::libtorch::describe_libtorch(),
             devices, threads, io_threads, bridge::malloc_name(), address, address)
      << models << std::flush;
}

void log_runtime_restart() {
  const char* set = std::getenv("TB_RUNTIME_ENV_SET");
  if (!set) return;
  spdlog::info("restarted with {}, which the runtime libraries read only when they load", set);
  if (std::strstr(set, "OPENBLAS_CORETYPE") != nullptr) {
    spdlog::info(
        "OpenBLAS did not recognise this CPU and fell back to its generic kernels; using its "
        "OPENBLAS_CORETYPE kernels instead (TB_KEEP_BLAS_KERNELS=1 keeps OpenBLAS's choice)");
  }
}

// A supervising process (a test harness) holds our stdin: when it goes away, so do we.
void exit_on_stdin_eof() {
  std::thread([] {
    char buf[256];
    while (::read(0, buf, sizeof buf) > 0) {
    }
    ::kill(::getpid(), SIGTERM);
  }).detach();
}

// {"Leaf.Name": n, ...} for every IR leaf, written next to `path` and renamed over it, so a reader
// never sees half a file.
bool write_op_counts(const std::string& path, const bridge::HostMetrics& metrics) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\n";
    for (std::size_t i = 0; i < metrics.ops_by_kind.size(); ++i) {
      const auto& [name, n] = metrics.ops_by_kind[i];
      out << fmt::format("  \"{}\": {}{}\n", json_escape(name), n,
                         i + 1 < metrics.ops_by_kind.size() ? "," : "");
    }
    out << "}\n";
    if (!out.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

int fail(int code, const Error& error) {
  spdlog::error("{}", error.what());
  return code;
}

}  // namespace

int serve(ServeArgs args, char** argv) {
  // Before anything else: a restart must not leave work half done.
  const auto restart_failed = backend::libtorch::restart_with_runtime_env(argv, args.threads);
  spdlog::set_level(spdlog::level::from_str(args.log_level));
  std::vector<std::string> warnings = thread_warnings(args.threads);
  if (restart_failed) warnings.insert(warnings.begin(), *restart_failed);
  const auto threads = backend::libtorch::apply_thread_policy(args.threads);
  if (auto s = read_files(args); !s) return fail(2, s.error());
  // Host::start warns when a non-loopback address is bound without a token.
  auto registry = std::make_shared<backend::libtorch::CustomOpRegistry>();
  auto devices = make_devices(args.devices, registry);
  if (!devices) return fail(2, devices.error());
  std::vector<std::string> device_names;
  for (const auto& d : devices.value()) device_names.push_back(d->device_name());
  auto served = serve_models(args.models, *registry, registry, device_names);
  if (!served) return fail(2, served.error());
  std::string model_list = served.value().text;
  const auto repository = served.value().repository;
  bridge::HostOptions& options = args.host;
  options.models = repository;
  options.admin_token = served.value().admin_token;

  // Signals are taken by this thread alone (sigwait below), not by the host's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::shared_ptr<bridge::C10dFederation> federation;
  if (!args.federation.empty()) {
    if (options.port == 0 && args.advertise.empty()) {
      return fail(2, make_error(ErrorCode::kInvalidArgument,
                                "--federation: a member needs a fixed --port (or --advertise), so "
                                "that the others can reach it"));
    }
    auto joined = join(args, address_of(options, options.port), device_names);
    if (!joined) return fail(1, joined.error());
    federation = std::move(joined).value();
    options.federation = federation;
  }
  bridge::Host host(options, devices.value());
  // After the host exists: it counts the models' weights against its limits.
  if (repository) model_list += repository->load_all();
  if (auto s = host.start(); !s) return fail(1, s.error());
  if (repository) repository->start();
  if (federation) {
    if (auto s = federation->wait_ready(); !s) {
      host.stop();
      return fail(1, s.error());
    }
  }
  print_start_line(address_of(options, host.port()), device_list(devices.value(), federation.get()),
                   backend::libtorch::describe(threads), options.io_threads, model_list);
  // After the start-up line: supervisors read the address from the first line.
  for (const auto& w : warnings) spdlog::warn("{}", w);
  log_runtime_restart();
  if (args.exit_on_stdin_eof) exit_on_stdin_eof();
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}: closing every session", sig);
  if (repository) repository->stop();
  host.stop();
  spdlog::info("stopped");
  if (!args.op_counts_file.empty() && !write_op_counts(args.op_counts_file, host.metrics())) {
    spdlog::error("cannot write the op counts to {}", args.op_counts_file);
    return 1;
  }
  return 0;
}

}  // namespace tb::cli
