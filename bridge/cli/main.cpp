// torchbridge: the command-line program. `serve` hosts Burn remote sessions on LibTorch.
#include <pthread.h>
#include <signal.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "json_text.hpp"
#include "ops_listing.hpp"
#include "serve_models.hpp"
#include "torchbridge/bridge/c10d_federation.hpp"
#include "torchbridge/bridge/host.hpp"
#include "torchbridge/decimal.hpp"
#include "torchbridge/ir/profile.hpp"
#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/libtorch/models.hpp"
#include "torchbridge/libtorch/threads.hpp"
#include "torchbridge/version.hpp"

namespace {

using tb::cli::json_escape;

char** g_argv = nullptr;  // for the OpenBLAS restart in serve()

// `torchbridge models PATH...`: what a client must declare to call each model.
int describe_models(const std::vector<std::string>& paths) {
  int rc = 0;
  for (const auto& path : paths) {
    auto text = tb::backend::libtorch::describe_model(path);
    if (!text) {
      std::cerr << text.error().what() << "\n";
      rc = 1;
      continue;
    }
    std::cout << path << "\n" << text.value();
  }
  return rc;
}

struct ServeArgs {
  std::string host = "127.0.0.1";
  std::uint16_t port = 3000;
  std::vector<std::string> devices;
  int threads = 0;
  int io_threads = 2;
  std::string log_level = "info";
  std::uint64_t max_message_bytes = std::uint64_t{1} << 30;
  std::uint64_t max_tensor_bytes = std::uint64_t{8} << 30;
  std::uint64_t max_session_bytes = tb::bridge::default_session_bytes();
  std::uint64_t max_host_bytes = tb::bridge::default_host_bytes();
  std::optional<std::uint64_t> max_device_bytes;
  std::uint32_t max_queued_answers = 64;
  std::uint32_t max_data_connections = 64;
  std::uint32_t max_sessions = 256;
  std::uint32_t max_graphs = 4096;
  std::uint32_t max_connections = 1024;
  std::string auth_token_file;
  std::vector<std::string> allowed_origins;
  std::string tls_cert, tls_key, tls_ca;
  std::uint64_t transfer_timeout_ms = 60000;
  std::uint64_t init_timeout_ms = 10000;
  bool exit_on_stdin_eof = false;
  tb::cli::ModelArgs models;
  std::string op_counts_file;
  // A member of a federation (docs/federation.md).
  std::string federation;  // the store's HOST:PORT
  std::uint32_t rank = 0, world_size = 1;
  std::string advertise;  // ws://HOST:PORT other members reach this one at
  std::uint64_t federation_timeout_ms = 120000;
};

// Joins the federation `args` names, for a host serving `device_names` at `address`.
tb::Result<std::shared_ptr<tb::bridge::C10dFederation>> join(
    const ServeArgs& args, const std::string& address, std::vector<std::string> device_names,
    const std::optional<std::string>& token) {
  tb::bridge::FederationOptions f;
  const auto colon = args.federation.rfind(':');
  if (colon == std::string::npos) {
    return tb::make_error(tb::ErrorCode::kInvalidArgument, "--federation {}: not HOST:PORT",
                          args.federation);
  }
  f.store_host = args.federation.substr(0, colon);
  const auto port = tb::parse_decimal<std::uint16_t>(args.federation.substr(colon + 1));
  if (!port || *port == 0) {
    return tb::make_error(tb::ErrorCode::kInvalidArgument, "--federation {}: not HOST:PORT",
                          args.federation);
  }
  f.store_port = *port;
  f.rank = args.rank;
  f.world_size = args.world_size;
  f.address = args.advertise.empty() ? address : args.advertise;
  f.device_names = std::move(device_names);
  f.token = token;
  f.timeout = std::chrono::milliseconds(args.federation_timeout_ms);
  return tb::bridge::join_federation(f);
}

// {"Leaf.Name": n, ...} for every IR leaf, written next to `path` and renamed over it, so a reader
// never sees half a file.
bool write_op_counts(const std::string& path, const tb::bridge::HostMetrics& metrics) {
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

int serve(const ServeArgs& args) {
  // Before anything else: a restart must not leave work half done.
  const auto restart_failed = tb::backend::libtorch::restart_with_runtime_env(g_argv, args.threads);
  spdlog::set_level(spdlog::level::from_str(args.log_level));
  // Logged after the start-up line, which supervisors read as the first line of output.
  std::vector<std::string> start_warnings;
  if (restart_failed) start_warnings.push_back(*restart_failed);
  const auto threads = tb::backend::libtorch::apply_thread_policy(args.threads);
  // Measured on 2 cores (docs/benchmarks.md, thread policy): with the clients on the host's own
  // cores, a thread per CPU made every workload but the MLP slower than 1 thread.
  if (const unsigned cpus = std::thread::hardware_concurrency();
      args.threads > 1 && cpus > 0 && static_cast<unsigned>(args.threads) >= cpus) {
    start_warnings.push_back(fmt::format(
        "--threads {} on a machine with {} CPUs: the network threads and any client on this "
        "machine compete with ATen's threads for them; fewer threads than CPUs measured faster",
        args.threads, cpus));
  }

  tb::bridge::HostOptions options;
  options.host = args.host;
  options.port = args.port;
  options.io_threads = args.io_threads;
  options.limits.max_message_bytes = args.max_message_bytes;
  options.limits.max_tensor_bytes = args.max_tensor_bytes;
  options.limits.max_session_bytes = args.max_session_bytes;
  options.limits.max_host_bytes = args.max_host_bytes;
  options.limits.max_device_bytes = args.max_device_bytes;
  options.allowed_origins = args.allowed_origins;
  options.limits.max_queued_answers = args.max_queued_answers;
  options.limits.max_data_connections = args.max_data_connections;
  options.limits.max_sessions = args.max_sessions;
  options.limits.max_graphs_per_session = args.max_graphs;
  options.limits.max_connections = args.max_connections;
  options.transfer_timeout = std::chrono::milliseconds(args.transfer_timeout_ms);
  options.init_timeout = std::chrono::milliseconds(args.init_timeout_ms);
  if (!args.auth_token_file.empty()) {
    auto token = tb::cli::read_token_file(args.auth_token_file, "--auth-token-file");
    if (!token) {
      spdlog::error("{}", token.error().what());
      return 2;
    }
    options.auth_token = std::move(token).value();
  }
  if (!args.tls_cert.empty()) options.tls_cert_file = args.tls_cert;
  if (!args.tls_key.empty()) options.tls_key_file = args.tls_key;
  if (!args.tls_ca.empty()) options.tls_ca_file = args.tls_ca;
  // Host::start warns when a non-loopback address is bound without a token.

  auto registry = std::make_shared<tb::backend::libtorch::CustomOpRegistry>();
  std::vector<std::shared_ptr<tb::backend::Backend>> devices;
  std::vector<std::string> names =
      args.devices.empty() ? std::vector<std::string>{"cpu"} : args.devices;
  for (const auto& name : names) {
    auto backend = tb::backend::libtorch::make_backend({name, registry});
    if (!backend) {
      spdlog::error("{}", backend.error().what());
      return 2;
    }
    devices.push_back(std::move(backend).value());
  }
  std::vector<std::string> device_names;
  for (const auto& d : devices) device_names.push_back(d->device_name());
  auto served = tb::cli::serve_models(args.models, *registry, registry, device_names);
  if (!served) {
    spdlog::error("{}", served.error().what());
    return 2;
  }
  std::string model_list = served.value().text;
  const auto repository = served.value().repository;
  options.models = repository;
  options.admin_token = served.value().admin_token;

  // Signals are taken by this thread alone (sigwait below), not by the host's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string own_address = fmt::format(
      "{}://{}:{}", options.tls_cert_file ? "wss" : "ws",
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host,
      options.port);
  std::shared_ptr<tb::bridge::C10dFederation> federation;
  if (!args.federation.empty()) {
    if (options.port == 0 && args.advertise.empty()) {
      spdlog::error(
          "--federation: a member needs a fixed --port (or --advertise), so that the "
          "others can reach it");
      return 2;
    }
    spdlog::debug("joining the federation at {} as rank {} of {}", args.federation, args.rank,
                  args.world_size);
    auto joined = join(args, own_address, device_names, options.auth_token);
    if (!joined) {
      spdlog::error("{}", joined.error().what());
      return 1;
    }
    federation = std::move(joined).value();
    options.federation = federation;
  }
  tb::bridge::Host host(options, devices);
  // After the host exists: it counts the models' weights against its limits.
  if (repository) model_list += repository->load_all();
  if (auto s = host.start(); !s) {
    spdlog::error("{}", s.error().what());
    return 1;
  }
  if (repository) repository->start();
  if (federation) {
    if (auto s = federation->wait_ready(); !s) {
      spdlog::error("{}", s.error().what());
      host.stop();
      return 1;
    }
  }
  std::string device_list;
  if (federation) {
    for (const auto& m : federation->members()) {
      for (std::size_t i = 0; i < m.device_names.size(); ++i) {
        device_list += fmt::format(
            "{}{}={}{}", m.first_device + i ? ", " : "", m.first_device + i, m.device_names[i],
            m.rank == federation->rank() ? std::string() : fmt::format(" (member {})", m.rank));
      }
    }
  } else {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      device_list += fmt::format("{}{}={}", i ? ", " : "", i, devices[i]->device_name());
    }
  }
  const std::string address = fmt::format(
      "{}://{}:{}", options.tls_cert_file ? "wss" : "ws",
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host,
      host.port());
  std::cout
      << fmt::format(
             "torchbridge {} serving {} remote sessions on {} ({}; devices: {}; threads: "
             "{}, io {})\n"
             "Point a Burn program at it:  BURN_DEVICE=remote BURN_REMOTE_ADDRESS={} cargo run\n"
             "(or in code: Device::remote_options(&RemoteHost::websocket(\"{}\")).init()). Ctrl-C "
             "stops the host.\n",
             tb::kVersion, tb::ir::describe_served(), address,
             tb::backend::libtorch::describe_libtorch(), device_list,
             tb::backend::libtorch::describe(threads), options.io_threads, address, address)
      << model_list << std::flush;
  // After the start-up line: supervisors read the address from the first line.
  for (const auto& w : start_warnings) spdlog::warn("{}", w);
  if (const char* set = std::getenv("TB_RUNTIME_ENV_SET")) {
    spdlog::info("restarted with {}, which the runtime libraries read only when they load", set);
    if (std::strstr(set, "OPENBLAS_CORETYPE") != nullptr) {
      spdlog::info(
          "OpenBLAS did not recognise this CPU and fell back to its generic kernels; using its "
          "OPENBLAS_CORETYPE kernels instead (TB_KEEP_BLAS_KERNELS=1 keeps OpenBLAS's choice)");
    }
  }
  if (args.exit_on_stdin_eof) {
    // A supervising process (a test harness) holds our stdin: when it goes away, so do we.
    std::thread([] {
      char buf[256];
      while (::read(0, buf, sizeof buf) > 0) {
      }
      ::kill(::getpid(), SIGTERM);
    }).detach();
  }
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

}  // namespace

int main(int argc, char** argv) {
  g_argv = argv;
  CLI::App app{fmt::format("torchbridge {}: a LibTorch host for Burn's remote sessions ({})",
                           tb::kVersion, tb::ir::describe_served())};
  // Every wire version served, one per Burn release: a session speaks the one its Init names.
  app.set_version_flag(
      "--version", fmt::format("torchbridge {} ({}; {})", tb::kVersion, tb::ir::describe_served(),
                               tb::backend::libtorch::describe_libtorch()));
  app.require_subcommand(1);

  ServeArgs s;
  auto* serve_cmd =
      app.add_subcommand("serve", "Serve Burn remote sessions (websocket) on LibTorch");
  serve_cmd->add_option("--host", s.host, "Address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", s.port, "Port to listen on (0: any free port)")
      ->capture_default_str();
  serve_cmd->add_option("--device", s.devices,
                        "Device to serve, repeatable: cpu, cuda, cuda:N (device index = position; "
                        "default: cpu)");
  serve_cmd->add_option(
      "--threads", s.threads,
      "ATen intra-op threads (0: the CPUs this process may use, less one for the network "
      "threads and clients; at least 1)");
  serve_cmd->add_option("--io-threads", s.io_threads, "Network threads")->capture_default_str();
  serve_cmd->add_option("--log-level", s.log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  serve_cmd->add_option("--max-message-bytes", s.max_message_bytes, "Largest websocket message")
      ->capture_default_str();
  serve_cmd
      ->add_option("--max-tensor-bytes", s.max_tensor_bytes,
                   "Bytes of one tensor, registered or produced by an op (0: unlimited)")
      ->capture_default_str();
  serve_cmd
      ->add_option("--max-session-bytes", s.max_session_bytes,
                   "Bytes per session: tensors, queued answers, exposed copies (0: unlimited; "
                   "default: half the machine's memory)")
      ->capture_default_str();
  serve_cmd
      ->add_option("--max-host-bytes", s.max_host_bytes,
                   "Bytes of all sessions together, with messages being received (0: "
                   "unlimited; default: three quarters of the machine's memory)")
      ->capture_default_str();
  serve_cmd->add_option_function<std::uint64_t>(
      "--max-device-bytes", [&s](const std::uint64_t& v) { s.max_device_bytes = v; },
      "Bytes of tensors all sessions together may hold on each served device (0: unlimited; "
      "default: 90% of a GPU's memory, none for the CPU, whose tensors count against "
      "--max-host-bytes)");
  serve_cmd
      ->add_option("--max-queued-answers", s.max_queued_answers,
                   "Answers per session waiting for their client to read; its tasks wait behind "
                   "them")
      ->capture_default_str();
  serve_cmd
      ->add_option("--max-data-connections", s.max_data_connections,
                   "Concurrent /data connections (downloads carry no token)")
      ->capture_default_str();
  serve_cmd->add_option("--max-sessions", s.max_sessions, "Concurrent sessions")
      ->capture_default_str();
  serve_cmd->add_option("--max-graphs", s.max_graphs, "Cached graphs per session")
      ->capture_default_str();
  serve_cmd
      ->add_option("--max-connections", s.max_connections,
                   "Open connections of every kind, authorized or not")
      ->capture_default_str();
  serve_cmd
      ->add_option("--init-timeout-ms", s.init_timeout_ms,
                   "How long a new session may take to send its Init")
      ->capture_default_str();
  serve_cmd->add_option("--auth-token-file", s.auth_token_file,
                        "File whose first line is the shared secret clients must present");
  serve_cmd->add_option("--allow-origin", s.allowed_origins,
                        "A web page origin (https://app.example) whose pages may use this host; "
                        "repeatable. Requests from any other Origin are refused (none by default: "
                        "Burn's client sends none, browsers always do)");
  auto* tls_cert = serve_cmd->add_option(
      "--tls-cert", s.tls_cert,
      "PEM certificate chain: serve every route over TLS (wss://, https://); needs --tls-key");
  auto* tls_key = serve_cmd->add_option("--tls-key", s.tls_key, "PEM private key of --tls-cert");
  tls_cert->needs(tls_key);
  tls_key->needs(tls_cert);
  serve_cmd->add_option("--tls-ca", s.tls_ca,
                        "PEM CA bundle trusted when downloading from wss:// hosts (transfers; "
                        "default: the system's roots, SSL_CERT_FILE honoured)");
  serve_cmd
      ->add_option("--transfer-timeout-ms", s.transfer_timeout_ms,
                   "How long a transfer waits for its other side")
      ->capture_default_str();
  serve_cmd->add_flag("--exit-on-stdin-eof", s.exit_on_stdin_eof,
                      "Stop when standard input closes (for supervising processes)");
  tb::cli::add_model_options(*serve_cmd, s.models);
  serve_cmd->add_option("--federation", s.federation,
                        "Join a federation of hosts whose store is at HOST:PORT (rank 0 serves "
                        "it); clients see every member's devices at every member");
  serve_cmd->add_option("--rank", s.rank, "This member's rank in the federation")
      ->capture_default_str();
  serve_cmd->add_option("--world-size", s.world_size, "Members of the federation")
      ->capture_default_str();
  serve_cmd->add_option("--advertise", s.advertise,
                        "ws://HOST:PORT the other members reach this one at (default: --host and "
                        "--port)");
  serve_cmd
      ->add_option("--federation-timeout-ms", s.federation_timeout_ms,
                   "How long to wait for every member to join")
      ->capture_default_str();
  serve_cmd->add_option("--op-counts-file", s.op_counts_file,
                        "On a clean stop, write how often each IR leaf ran (JSON object keyed "
                        "by the names `ops` prints)");

  std::vector<std::string> model_paths;
  auto* models_cmd = app.add_subcommand(
      "models", "Print models' forward signatures and what a custom op must declare");
  models_cmd
      ->add_option("paths", model_paths, "TorchScript modules (.pt), AOTInductor packages (.pt2)")
      ->required();

  bool json = false;
  bool markdown = false;
  std::uint16_t protocol = 0;
  auto* ops_cmd =
      app.add_subcommand("ops", "List every Burn IR operation and whether it is lowered");
  auto* json_flag = ops_cmd->add_flag("--json", json, "Print a JSON array");
  ops_cmd->add_flag("--markdown", markdown, "Print docs/op-coverage.md")->excludes(json_flag);
  ops_cmd->add_option("--protocol", protocol,
                      "Only the leaves of this wire version (" + tb::ir::describe_served() + ")");

  CLI11_PARSE(app, argc, argv);
  if (*serve_cmd) return serve(s);
  if (*ops_cmd) {
    return tb::cli::list_ops(json       ? tb::cli::OpsFormat::kJson
                             : markdown ? tb::cli::OpsFormat::kMarkdown
                                        : tb::cli::OpsFormat::kText,
                             protocol);
  }
  if (*models_cmd) return describe_models(model_paths);
  return 0;
}
