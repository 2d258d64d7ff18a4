// A host in a child process (`torchbridge serve` or Burn's reference_server), started with
// --exit-on-stdin-eof: its ws:// address comes from its first stdout line; closing its stdin
// stops it, and a child that does not stop in time is killed.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "torchbridge/result.hpp"

namespace tb::test {

class ChildServer {
 public:
  // `address_space`: when non-zero, the child's RLIMIT_AS, so that its allocations fail inside
  // the process (as on a host out of memory) instead of waking the OOM killer.
  explicit ChildServer(std::vector<std::string> argv,
                       std::chrono::milliseconds startup = std::chrono::seconds(60),
                       std::uint64_t address_space = 0) {
    int in[2];
    int out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) {
      error_ = "pipe failed";
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      if (address_space) {
        const rlimit limit{address_space, address_space};
        if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(126);
      }
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    if (pid_ < 0) {
      error_ = "fork failed";
      return;
    }
    // The first line, bounded in time.
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + startup;
    while (line.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        error_ = argv[0] + " printed no address within the start-up time";
        return;
      }
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[512];
      const auto n = ::read(stdout_, buf, sizeof buf);
      if (n <= 0) {
        error_ = argv[0] + " exited before printing its address";
        return;
      }
      line.append(buf, static_cast<std::size_t>(n));
    }
    const auto at = line.find("ws://");
    if (at == std::string::npos) {
      error_ = "no ws:// address in '" + line + "'";
      return;
    }
    const auto end = line.find_first_of(" \t\r\n", at);
    address_ = line.substr(at, end - at);
    // Keep the pipe drained: a child writing logs to a full pipe would stall.
    drain_ = std::thread([fd = stdout_] {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    });
  }

  ~ChildServer() {
    if (stdin_ >= 0) ::close(stdin_);
    if (pid_ > 0 && !reaped_) {
      int status = 0;
      bool done = false;
      for (int i = 0; i < 100 && !done; ++i) {
        done = ::waitpid(pid_, &status, WNOHANG) == pid_;
        if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (!done) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
    }
    if (drain_.joinable()) drain_.join();
    if (stdout_ >= 0) ::close(stdout_);
  }
  ChildServer(const ChildServer&) = delete;
  ChildServer& operator=(const ChildServer&) = delete;

  bool ok() const { return error_.empty(); }
  // The child has not exited (or been killed).
  bool alive() const {
    if (pid_ <= 0 || reaped_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return true;
    reaped_ = true;
    exit_status_ = status;
    return false;
  }
  // How it ended, once alive() saw it end: "exit 2", "signal 6".
  std::string how_it_ended() const {
    if (!reaped_) return "running";
    if (WIFSIGNALED(exit_status_)) return "signal " + std::to_string(WTERMSIG(exit_status_));
    return "exit " + std::to_string(WEXITSTATUS(exit_status_));
  }
  pid_t pid() const { return pid_; }
  std::uint16_t port() const {
    const auto colon = address_.rfind(':');
    return colon == std::string::npos
               ? 0
               : static_cast<std::uint16_t>(std::stoi(address_.substr(colon + 1)));
  }
  const std::string& error() const { return error_; }
  const std::string& address() const { return address_; }

 private:
  pid_t pid_ = -1;
  mutable bool reaped_ = false;
  mutable int exit_status_ = 0;
  int stdin_ = -1;
  int stdout_ = -1;
  std::string address_;
  std::string error_;
  std::thread drain_;
};

}  // namespace tb::test
