#include "transport/frame_capture.hpp"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tb::bridge {

namespace {

// The file: this magic, the protocol version (2 bytes, little-endian), then per frame its length
// (8 bytes, little-endian) and its bytes.
constexpr std::array<char, 8> kMagic = {'T', 'B', 'C', 'A', 'P', '1', '\n', '\0'};
constexpr std::uint64_t kDefaultMaxBytes = std::uint64_t{1} << 30;

template <std::size_t N>
std::array<unsigned char, N> little_endian(std::uint64_t v) {
  std::array<unsigned char, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
  return out;
}

std::uint64_t from_little_endian(const unsigned char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

std::uint64_t max_bytes_from_env() {
  const char* v = std::getenv("TB_CAPTURE_MAX_BYTES");
  if (v == nullptr || *v == '\0') return kDefaultMaxBytes;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0') {
    spdlog::warn("TB_CAPTURE_MAX_BYTES={} is not a number of bytes: {} used", v, kDefaultMaxBytes);
    return kDefaultMaxBytes;
  }
  return n;
}

}  // namespace

std::unique_ptr<FrameCapture> FrameCapture::from_env(std::uint64_t session_id,
                                                     std::uint16_t protocol) {
  const char* dir = std::getenv("TB_CAPTURE_DIR");
  if (dir == nullptr || *dir == '\0') return nullptr;
  // A file of its own, never an earlier one overwritten: the client names its session, and Burn's
  // client opens a session of the same id again after a lost connection.
  constexpr int kNames = 1000;
  for (int n = 0; n < kNames; ++n) {
    const std::string path = n == 0
                                 ? fmt::format("{}/session-{:016x}.tbcap", dir, session_id)
                                 : fmt::format("{}/session-{:016x}-{}.tbcap", dir, session_id, n);
    std::FILE* file = std::fopen(path.c_str(), "wbx");
    if (file == nullptr && errno == EEXIST) continue;
    auto capture = start(file, path, protocol, max_bytes_from_env());
    if (capture) spdlog::info("session {:016x}: capturing its frames to {}", session_id, path);
    return capture;
  }
  spdlog::warn("session {:016x}: not captured, {} captures of it are in {} already", session_id,
               kNames, dir);
  return nullptr;
}

std::unique_ptr<FrameCapture> FrameCapture::open(const std::string& path, std::uint16_t protocol,
                                                 std::uint64_t max_bytes) {
  return start(std::fopen(path.c_str(), "wb"), path, protocol, max_bytes);
}

std::unique_ptr<FrameCapture> FrameCapture::start(std::FILE* file, const std::string& path,
                                                  std::uint16_t protocol, std::uint64_t max_bytes) {
  if (file == nullptr) {
    spdlog::warn("cannot capture frames to {}: {}", path, std::strerror(errno));
    return nullptr;
  }
  const auto version = little_endian<2>(protocol);
  if (std::fwrite(kMagic.data(), 1, kMagic.size(), file) != kMagic.size() ||
      std::fwrite(version.data(), 1, version.size(), file) != version.size()) {
    spdlog::warn("cannot capture frames to {}: {}", path, std::strerror(errno));
    std::fclose(file);
    return nullptr;
  }
  return std::unique_ptr<FrameCapture>(new FrameCapture(file, path, max_bytes));
}

FrameCapture::~FrameCapture() {
  if (file_ != nullptr) std::fclose(file_);
}

void FrameCapture::stop() {
  std::fclose(file_);
  file_ = nullptr;
}

void FrameCapture::write(const ir::Bytes& frame) {
  if (file_ == nullptr) return;
  if (frame.size() > max_bytes_ - written_) {
    spdlog::warn(
        "capture {}: {} bytes of frames written, the limit (TB_CAPTURE_MAX_BYTES); later "
        "frames are not captured",
        path_, written_);
    return stop();
  }
  const auto length = little_endian<8>(frame.size());
  if (std::fwrite(length.data(), 1, length.size(), file_) != length.size() ||
      // An empty frame's data may be null, which fwrite must not be given even for no bytes.
      (frame.size() != 0 && std::fwrite(frame.data(), 1, frame.size(), file_) != frame.size())) {
    spdlog::warn("capture {}: write failed ({}); later frames are not captured", path_,
                 std::strerror(errno));
    return stop();
  }
  // Whole frames on disk at every frame's end: a host that dies mid-session leaves a capture
  // that replays up to the frame that killed it.
  std::fflush(file_);
  written_ += frame.size();
}

Result<CapturedSession> read_capture(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) return make_error(ErrorCode::kIo, "{}: {}", path, std::strerror(errno));
  std::array<unsigned char, kMagic.size() + 2> header{};
  if (std::fread(header.data(), 1, header.size(), file.get()) != header.size() ||
      std::memcmp(header.data(), kMagic.data(), kMagic.size()) != 0) {
    return make_error(ErrorCode::kDecode, "{}: not a torchbridge frame capture", path);
  }
  CapturedSession session;
  session.protocol = static_cast<std::uint16_t>(from_little_endian(&header[kMagic.size()], 2));
  std::array<unsigned char, 8> length{};
  while (true) {
    const std::size_t got = std::fread(length.data(), 1, length.size(), file.get());
    if (got == 0 && std::feof(file.get())) break;
    if (got != length.size()) {
      return make_error(ErrorCode::kDecode, "{}: cut off in frame {}'s length", path,
                        session.frames.size());
    }
    const std::uint64_t n = from_little_endian(length.data(), length.size());
    // Read in pieces: a corrupt length must not allocate more than the file holds.
    std::vector<std::uint8_t> bytes;
    constexpr std::size_t kPiece = std::size_t{1} << 20;
    while (bytes.size() < n) {
      const std::size_t want =
          static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, n - bytes.size()));
      const std::size_t at = bytes.size();
      bytes.resize(at + want);
      if (std::fread(bytes.data() + at, 1, want, file.get()) != want) {
        return make_error(ErrorCode::kDecode, "{}: cut off in frame {} ({} of {} bytes)", path,
                          session.frames.size(), at, n);
      }
    }
    session.frames.push_back(ir::Bytes::from_vector(std::move(bytes)));
  }
  return session;
}

}  // namespace tb::bridge
