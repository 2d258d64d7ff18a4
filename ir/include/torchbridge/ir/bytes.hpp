// Bytes: an immutable, reference-counted view of contiguous bytes.
//
// Tensor payloads travel as views: decoded straight out of the received frame, or encoded straight
// from tensor storage, without an intermediate copy. The owner keeps whatever backs the view alive
// (a frame buffer, an at::Tensor, a std::vector).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace tb::ir {

class Bytes {
 public:
  Bytes() = default;
  Bytes(std::shared_ptr<const void> owner, const std::uint8_t* data, std::size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  static Bytes from_vector(std::vector<std::uint8_t> bytes) {
    auto owner = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
    const auto* data = owner->data();
    const auto size = owner->size();
    return Bytes(std::move(owner), data, size);
  }
  static Bytes copy_of(const void* data, std::size_t size) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    return from_vector(std::vector<std::uint8_t>(p, p + size));
  }

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

  // A view of [offset, offset + size) sharing this owner. The caller checks the bounds.
  Bytes slice(std::size_t offset, std::size_t size) const {
    return Bytes(owner_, data_ + offset, size);
  }
  std::string_view view() const {
    return std::string_view(reinterpret_cast<const char*>(data_), size_);
  }

  friend bool operator==(const Bytes& a, const Bytes& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.data_, b.data_, a.size_) == 0);
  }
  friend bool operator!=(const Bytes& a, const Bytes& b) { return !(a == b); }

 private:
  std::shared_ptr<const void> owner_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tb::ir
