// Fields cut from a fuzz input, so that one byte string drives a call with several arguments.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::fuzz {

// Not thread-safe. Reads fields front to back; once the bytes run out every field is empty or 0.
class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  bool empty() const { return at_ == size_; }

  // The next byte, 0 at the end.
  std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }

  // A string whose length is the next byte (at most 255 bytes): length-prefixed rather than
  // separated, so any byte, a separator included, can be inside one.
  std::string text() { return take(byte()); }

  // Everything left.
  std::string rest() { return take(size_ - at_); }

 private:
  std::string take(std::size_t n) {
    n = std::min(n, size_ - at_);
    std::string s(reinterpret_cast<const char*>(data_ + at_), n);
    at_ += n;
    return s;
  }

  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace sluice::fuzz
