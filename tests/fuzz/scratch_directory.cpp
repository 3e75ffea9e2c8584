#include "scratch_directory.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace sluice::fuzz {
namespace {

struct Scratch {
  std::string path;
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/sluice-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

const std::string& scratch_directory() {
  static const Scratch scratch;
  return scratch.path;
}

}  // namespace sluice::fuzz
