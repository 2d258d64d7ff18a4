// A session's frames written to a file, so that the session can be replayed in one process without
// its client (`torchbridge replay`, torchbridge/bridge/replay.hpp): decoding and running exactly
// what an unmodified Burn program sent, with nothing else on the CPU. perf, callgrind and A/B
// comparisons of the host's per-op cost then measure the host alone (on a shared machine the
// client's CPU and the scheduler set the wall clock; docs/benchmarks.md, issue 42).
//
// Off unless the operator sets TB_CAPTURE_DIR; each session's file stops growing at
// TB_CAPTURE_MAX_BYTES (default 1 GiB) with one warning. A capture never fails a session: a file
// that cannot be written ends the capture, not the session.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "torchbridge/ir/bytes.hpp"
#include "torchbridge/result.hpp"

namespace tb::bridge {

class FrameCapture {
 public:
  // A capture of session `session_id` under TB_CAPTURE_DIR, in a file no earlier capture has
  // (session-<id>.tbcap, else session-<id>-<n>.tbcap), or null when the variable is unset or no
  // file can be created (logged).
  static std::unique_ptr<FrameCapture> from_env(std::uint64_t session_id, std::uint16_t protocol);
  // A capture into `path`, holding at most `max_bytes` of frames; null when it cannot be created.
  static std::unique_ptr<FrameCapture> open(const std::string& path, std::uint16_t protocol,
                                            std::uint64_t max_bytes);
  ~FrameCapture();
  FrameCapture(const FrameCapture&) = delete;
  FrameCapture& operator=(const FrameCapture&) = delete;

  // Appends one frame as the session received it (after the Init).
  void write(const ir::Bytes& frame);
  // Whether frames are still written (false once over the limit or after a write error).
  bool active() const { return file_ != nullptr; }

 private:
  FrameCapture(std::FILE* file, std::string path, std::uint64_t max_bytes)
      : file_(file), path_(std::move(path)), max_bytes_(max_bytes) {}
  // Writes the header to `file` (null: `path` could not be opened, logged) and owns it.
  static std::unique_ptr<FrameCapture> start(std::FILE* file, const std::string& path,
                                             std::uint16_t protocol, std::uint64_t max_bytes);
  void stop();

  std::FILE* file_;
  std::string path_;
  std::uint64_t max_bytes_;
  std::uint64_t written_ = 0;
};

// A capture file read back: the session's protocol version and its frames in order.
struct CapturedSession {
  std::uint16_t protocol = 0;
  std::vector<ir::Bytes> frames;
};
Result<CapturedSession> read_capture(const std::string& path);

}  // namespace tb::bridge
