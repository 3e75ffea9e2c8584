// Where a case runs: a temp file (WAL) with synchronous FULL or NORMAL, or :memory:.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sluice/options.hpp"

namespace bench {

struct Storage {
  std::string name;
  bool in_memory = false;
  sluice::Synchronous synchronous = sluice::Synchronous::kFull;

  // sluice's options for this storage.
  sluice::Options options() const;
};

// file FULL, file NORMAL, memory.
std::vector<Storage> all_storages();
Storage file_storage(sluice::Synchronous synchronous);

// Not thread-safe. A private temp directory, removed with everything in it on destruction.
class ScratchDir {
 public:
  // Under `parent`, or the system temp directory when empty.
  explicit ScratchDir(const std::string& parent);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // A path for a new database: ":memory:" for memory storage, else `name` in this directory
  // with any previous file of that name (and its -wal, -shm) removed.
  std::string fresh_database(const std::string& name, const Storage& storage) const;
  // A new empty directory `name` in this directory, any previous one removed with its contents.
  std::string fresh_directory(const std::string& name) const;
  // Removes a database file and its -wal and -shm.
  static void remove_database(const std::string& path);

 private:
  std::filesystem::path dir_;
};

}  // namespace bench
