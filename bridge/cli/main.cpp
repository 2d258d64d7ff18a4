// torchbridge: the command-line program. `serve` hosts Burn remote sessions on LibTorch.
#include <pthread.h>
#include <signal.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "torchbridge/bridge/host.hpp"
#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/version.hpp"

namespace {

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += c;
        }
    }
  }
  return out;
}

int list_ops(bool json) {
  using tb::backend::libtorch::lowering_status;
  std::size_t lowered = 0;
  if (json) std::cout << "[\n";
  for (std::size_t k = 0; k < tb::ir::kOpKindCount; ++k) {
    const auto kind = static_cast<tb::ir::OpKind>(k);
    const auto status = lowering_status(kind);
    lowered += status.lowered;
    if (json) {
      std::cout << fmt::format("  {{\"op\": \"{}\", \"lowered\": {}, \"note\": \"{}\"}}{}\n",
                               tb::ir::op_name(kind), status.lowered ? "true" : "false",
                               json_escape(status.note), k + 1 < tb::ir::kOpKindCount ? "," : "");
    } else {
      std::cout << fmt::format("{:<48} {}{}\n", tb::ir::op_name(kind),
                               status.lowered ? "lowered" : "NOT LOWERED",
                               status.note.empty() ? "" : "  (" + status.note + ")");
    }
  }
  if (json) {
    std::cout << "]\n";
  } else {
    std::cout << fmt::format("{} of {} leaves lowered\n", lowered, tb::ir::kOpKindCount);
  }
  return 0;
}

struct ServeArgs {
  std::string host = "127.0.0.1";
  std::uint16_t port = 3000;
  std::vector<std::string> devices;
  int threads = 0;
  int io_threads = 2;
  std::string log_level = "info";
  std::uint64_t max_message_bytes = std::uint64_t{1} << 30;
  std::uint64_t max_session_bytes = 0;
  std::uint32_t max_sessions = 256;
  std::uint32_t max_graphs = 4096;
  std::string auth_token_file;
  std::uint64_t transfer_timeout_ms = 60000;
  bool exit_on_stdin_eof = false;
  std::string op_counts_file;
};

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
  spdlog::set_level(spdlog::level::from_str(args.log_level));
  if (args.threads > 0) at::set_num_threads(args.threads);

  tb::bridge::HostOptions options;
  options.host = args.host;
  options.port = args.port;
  options.io_threads = args.io_threads;
  options.limits.max_message_bytes = args.max_message_bytes;
  options.limits.max_session_bytes = args.max_session_bytes;
  options.limits.max_sessions = args.max_sessions;
  options.limits.max_graphs_per_session = args.max_graphs;
  options.transfer_timeout = std::chrono::milliseconds(args.transfer_timeout_ms);
  if (!args.auth_token_file.empty()) {
    std::ifstream in(args.auth_token_file);
    std::string token;
    if (!in || !std::getline(in, token) || token.empty()) {
      spdlog::error("cannot read a token from {}", args.auth_token_file);
      return 2;
    }
    options.auth_token = token;
  }
  if (options.host != "127.0.0.1" && options.host != "::1" && options.host != "localhost" &&
      !options.auth_token) {
    spdlog::warn(
        "listening on {} without --auth-token-file: anyone who reaches this port can run "
        "code on these devices",
        options.host);
  }

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

  // Signals are taken by this thread alone (sigwait below), not by the host's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  tb::bridge::Host host(options, devices);
  if (auto s = host.start(); !s) {
    spdlog::error("{}", s.error().what());
    return 1;
  }
  std::string device_list;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    device_list += fmt::format("{}{}={}", i ? ", " : "", i, devices[i]->device_name());
  }
  const std::string address = fmt::format(
      "ws://{}:{}",
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host,
      host.port());
  std::cout
      << fmt::format(
             "torchbridge {} serving Burn {} remote sessions on {} (LibTorch {}; devices: {})\n"
             "Point a Burn program at it:  BURN_DEVICE=remote BURN_REMOTE_ADDRESS={} cargo run\n"
             "(or in code: RemoteDevice::websocket(\"{}\", 0)). Ctrl-C stops the host.\n",
             tb::kVersion, tb::kBurnVersion, address, tb::backend::libtorch::torch_version(),
             device_list, address, address)
      << std::flush;
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
  CLI::App app{fmt::format("torchbridge {}: a LibTorch host for Burn {} remote sessions",
                           tb::kVersion, tb::kBurnVersion)};
  app.set_version_flag("--version",
                       fmt::format("torchbridge {} (Burn {}, LibTorch {})", tb::kVersion,
                                   tb::kBurnVersion, tb::backend::libtorch::torch_version()));
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
  serve_cmd->add_option("--threads", s.threads, "ATen intra-op threads (0: LibTorch's default)");
  serve_cmd->add_option("--io-threads", s.io_threads, "Network threads")->capture_default_str();
  serve_cmd->add_option("--log-level", s.log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  serve_cmd->add_option("--max-message-bytes", s.max_message_bytes, "Largest websocket message")
      ->capture_default_str();
  serve_cmd
      ->add_option("--max-session-bytes", s.max_session_bytes,
                   "Live tensor bytes per session (0: unlimited)")
      ->capture_default_str();
  serve_cmd->add_option("--max-sessions", s.max_sessions, "Concurrent sessions")
      ->capture_default_str();
  serve_cmd->add_option("--max-graphs", s.max_graphs, "Cached graphs per session")
      ->capture_default_str();
  serve_cmd->add_option("--auth-token-file", s.auth_token_file,
                        "File whose first line is the shared secret clients must present");
  serve_cmd
      ->add_option("--transfer-timeout-ms", s.transfer_timeout_ms,
                   "How long a transfer waits for its other side")
      ->capture_default_str();
  serve_cmd->add_flag("--exit-on-stdin-eof", s.exit_on_stdin_eof,
                      "Stop when standard input closes (for supervising processes)");
  serve_cmd->add_option("--op-counts-file", s.op_counts_file,
                        "On a clean stop, write how often each IR leaf ran (JSON object keyed "
                        "by the names `ops` prints)");

  bool json = false;
  auto* ops_cmd =
      app.add_subcommand("ops", "List every Burn IR operation and whether it is lowered");
  ops_cmd->add_flag("--json", json, "Print a JSON array");

  CLI11_PARSE(app, argc, argv);
  if (*serve_cmd) return serve(s);
  if (*ops_cmd) return list_ops(json);
  return 0;
}
