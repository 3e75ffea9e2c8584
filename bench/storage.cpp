#include "storage.hpp"

#include <stdlib.h>

#include <stdexcept>
#include <system_error>

namespace bench {

sluice::Options Storage::options() const {
  sluice::Options options;
  options.synchronous = synchronous;
  return options;
}

Storage file_storage(sluice::Synchronous synchronous) {
  return {synchronous == sluice::Synchronous::kFull ? "file FULL" : "file NORMAL", false,
          synchronous};
}

std::vector<Storage> all_storages() {
  return {file_storage(sluice::Synchronous::kFull),
          file_storage(sluice::Synchronous::kNormal),
          {"memory", true, sluice::Synchronous::kNormal}};
}

ScratchDir::ScratchDir(const std::string& parent) {
  std::filesystem::path base =
      parent.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(parent);
  std::string pattern = (base / "sluice-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "bench: mkdtemp " + pattern);
  }
  dir_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string ScratchDir::fresh_database(const std::string& name, const Storage& storage) const {
  if (storage.in_memory) return ":memory:";
  std::string path = (dir_ / (name + ".db")).string();
  remove_database(path);
  return path;
}

std::string ScratchDir::fresh_directory(const std::string& name) const {
  const std::filesystem::path path = dir_ / name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directory(path);
  return path.string();
}

void ScratchDir::remove_database(const std::string& path) {
  if (path == ":memory:") return;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

}  // namespace bench
