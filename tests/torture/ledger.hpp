// The producer's ledger: an append-only file of event IDs outside the database, written after
// the enqueue's commit returned, so it lists exactly what the app was told is safe.
#pragma once

#include <string>
#include <vector>

namespace sluice::torture {

// Not thread-safe. One ID per line; each append is one write(2) followed, when durable, by
// fdatasync, so a kill or power cut never leaves a listed ID that was not acknowledged.
class Ledger {
 public:
  Ledger(const std::string& path, bool durable);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  void append(const std::string& id);

  // The complete lines of the ledger at `path`, in append order; none if it does not exist.
  static std::vector<std::string> read(const std::string& path);

 private:
  std::string path_;
  int fd_;
  bool durable_;
};

}  // namespace sluice::torture
