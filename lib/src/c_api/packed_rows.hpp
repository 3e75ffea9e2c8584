// Rows of a C struct and the strings they point to, in one block from malloc, so the caller
// frees all of it with one sluice_free.
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace sluice::c_api {

// Not thread-safe. Rows come first (malloc aligns them), the strings after them.
template <class Row>
class PackedRows {
 public:
  // Room for `rows` rows and `text_bytes` bytes of strings, each string's NUL included. Throws
  // std::bad_alloc.
  PackedRows(std::size_t rows, std::size_t text_bytes)
      : rows_(rows), block_(rows == 0 ? nullptr : std::malloc(rows * sizeof(Row) + text_bytes)) {
    if (rows != 0 && block_ == nullptr) throw std::bad_alloc();
    if (block_ != nullptr) std::memset(block_, 0, rows * sizeof(Row));
    text_ = static_cast<char*>(block_) + rows * sizeof(Row);
  }
  ~PackedRows() { std::free(block_); }
  PackedRows(const PackedRows&) = delete;
  PackedRows& operator=(const PackedRows&) = delete;

  // The bytes `text` takes in the block.
  static std::size_t bytes(const std::string& text) { return text.size() + 1; }

  Row& row(std::size_t i) { return static_cast<Row*>(block_)[i]; }

  // A copy of `text` in the block; the room for it was counted in text_bytes.
  const char* text(const std::string& text) {
    char* copy = text_;
    std::memcpy(copy, text.c_str(), text.size() + 1);
    text_ += text.size() + 1;
    return copy;
  }

  // The block, now the caller's; null when there are no rows.
  Row* release() {
    void* block = block_;
    block_ = nullptr;
    return static_cast<Row*>(block);
  }

  std::size_t size() const { return rows_; }

 private:
  std::size_t rows_;
  void* block_;
  char* text_;
};

}  // namespace sluice::c_api
