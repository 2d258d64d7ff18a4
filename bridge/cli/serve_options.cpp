// The options of `torchbridge serve`. Each binds to the field it sets; the defaults shown are
// those fields' own (HostOptions and Limits in host.hpp).
#include <chrono>

#include "serve_command.hpp"

namespace tb::cli {
namespace {

// A duration in milliseconds, for a std::chrono::milliseconds field.
void add_ms(CLI::App& cmd, const std::string& name, std::chrono::milliseconds& field,
            const std::string& help) {
  cmd.add_option_function<std::uint64_t>(
         name, [&field](const std::uint64_t& ms) { field = std::chrono::milliseconds(ms); }, help)
      ->default_str(std::to_string(field.count()));
}

void add_network_options(CLI::App& cmd, ServeArgs& s) {
  cmd.add_option("--host", s.host.host, "Address to listen on")->capture_default_str();
  cmd.add_option("--port", s.host.port, "Port to listen on (0: any free port)")
      ->capture_default_str();
  cmd.add_option("--io-threads", s.host.io_threads, "Network threads")->capture_default_str();
  add_ms(cmd, "--init-timeout-ms", s.host.init_timeout,
         "How long a new session may take to send its Init");
  add_ms(cmd, "--idle-timeout-ms", s.host.idle_timeout,
         "How long a session may stay silent, pings unanswered, before it is closed (0: never)");
  add_ms(cmd, "--transfer-timeout-ms", s.host.transfer_timeout,
         "How long a transfer waits for its other side");
  cmd.add_option("--auth-token-file", s.auth_token_file,
                 "File whose first line is the shared secret clients must present");
  cmd.add_option("--allow-origin", s.host.allowed_origins,
                 "A web page origin (https://app.example) whose pages may use this host; "
                 "repeatable. Requests from any other Origin are refused (none by default: "
                 "Burn's client sends none, browsers always do)");
  auto* cert = cmd.add_option(
      "--tls-cert", s.tls_cert,
      "PEM certificate chain: serve every route over TLS (wss://, https://); needs --tls-key");
  auto* key = cmd.add_option("--tls-key", s.tls_key, "PEM private key of --tls-cert");
  cert->needs(key);
  key->needs(cert);
  cmd.add_option("--tls-ca", s.tls_ca,
                 "PEM CA bundle trusted when downloading from wss:// hosts (transfers; default: "
                 "the system's roots, SSL_CERT_FILE honoured)");
}

void add_limit_options(CLI::App& cmd, bridge::Limits& l) {
  cmd.add_option("--max-message-bytes", l.max_message_bytes, "Largest websocket message")
      ->capture_default_str();
  cmd.add_option("--max-tensor-bytes", l.max_tensor_bytes,
                 "Bytes of one tensor, registered or produced by an op (0: unlimited)")
      ->capture_default_str();
  cmd.add_option("--max-session-bytes", l.max_session_bytes,
                 "Bytes per session: tensors, queued answers, exposed copies (0: unlimited; "
                 "default: half the machine's memory)")
      ->capture_default_str();
  cmd.add_option("--max-host-bytes", l.max_host_bytes,
                 "Bytes of all sessions together, with messages being received (0: unlimited; "
                 "default: three quarters of the machine's memory)")
      ->capture_default_str();
  cmd.add_option_function<std::uint64_t>(
      "--max-device-bytes", [&l](const std::uint64_t& v) { l.max_device_bytes = v; },
      "Bytes of tensors all sessions together may hold on each served device (0: unlimited; "
      "default: 90% of a GPU's memory, none for the CPU, whose tensors count against "
      "--max-host-bytes)");
  cmd.add_option("--max-queued-answers", l.max_queued_answers,
                 "Answers per session waiting for their client to read; its tasks wait behind "
                 "them")
      ->capture_default_str();
  cmd.add_option("--max-data-connections", l.max_data_connections,
                 "Concurrent /data connections (downloads carry no token)")
      ->capture_default_str();
  cmd.add_option("--max-sessions", l.max_sessions, "Concurrent sessions")->capture_default_str();
  cmd.add_option("--max-graphs", l.max_graphs_per_session, "Cached graphs per session")
      ->capture_default_str();
  cmd.add_option("--max-connections", l.max_connections,
                 "Open connections of every kind, authorized or not")
      ->capture_default_str();
}

void add_federation_options(CLI::App& cmd, ServeArgs& s) {
  cmd.add_option("--federation", s.federation,
                 "Join a federation of hosts whose store is at HOST:PORT (rank 0 serves it); "
                 "clients see every member's devices at every member");
  cmd.add_option("--rank", s.rank, "This member's rank in the federation")->capture_default_str();
  cmd.add_option("--world-size", s.world_size, "Members of the federation")->capture_default_str();
  cmd.add_option("--advertise", s.advertise,
                 "ws://HOST:PORT the other members reach this one at (default: --host and "
                 "--port)");
  cmd.add_option("--federation-timeout-ms", s.federation_timeout_ms,
                 "How long to wait for every member to join")
      ->capture_default_str();
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeArgs& s) {
  auto* cmd = app.add_subcommand("serve", "Serve Burn remote sessions (websocket) on LibTorch");
  cmd->add_option("--device", s.devices,
                  "Device to serve, repeatable: cpu, cuda, cuda:N (device index = position; "
                  "default: cpu)");
  cmd->add_option("--threads", s.threads,
                  "ATen intra-op threads (0: the CPUs this process may use, less one for the "
                  "network threads and clients; at least 1)");
  cmd->add_option("--log-level", s.log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str();
  add_network_options(*cmd, s);
  add_limit_options(*cmd, s.host.limits);
  cmd->add_flag("--exit-on-stdin-eof", s.exit_on_stdin_eof,
                "Stop when standard input closes (for supervising processes)");
  add_model_options(*cmd, s.models);
  add_federation_options(*cmd, s);
  cmd->add_option("--op-counts-file", s.op_counts_file,
                  "On a clean stop, write how often each IR leaf ran (JSON object keyed by the "
                  "names `ops` prints)");
  return cmd;
}

}  // namespace tb::cli
