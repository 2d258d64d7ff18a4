// `torchbridge serve`: its options and what it does with them. The options bind to the host's
// own HostOptions (so a default is written once, in host.hpp); ServeArgs keeps only what is the
// command's: devices, threads, files to read, models and the federation to join.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "serve_models.hpp"
#include "torchbridge/bridge/host.hpp"

namespace tb::cli {

struct ServeArgs {
  bridge::HostOptions host;  // bound directly; the token and TLS files are read into it
  std::vector<std::string> devices;
  int threads = 0;
  std::string log_level = "info";
  std::string auth_token_file;
  std::string tls_cert, tls_key, tls_ca;
  bool exit_on_stdin_eof = false;
  ModelArgs models;
  std::string op_counts_file;
  // A member of a federation (docs/federation.md).
  std::string federation;  // the store's HOST:PORT
  std::uint32_t rank = 0, world_size = 1;
  std::string advertise;  // ws://HOST:PORT other members reach this one at
  std::uint64_t federation_timeout_ms = 120000;
};

// The `serve` subcommand's options, bound to `args`.
CLI::App* add_serve_command(CLI::App& app, ServeArgs& args);

// Serves until SIGINT or SIGTERM. `argv` is for the restart that sets the runtime libraries'
// environment (OpenBLAS). Exit codes: 0 stopped, 1 a failure while starting, 2 a bad option.
int serve(ServeArgs args, char** argv);

}  // namespace tb::cli
