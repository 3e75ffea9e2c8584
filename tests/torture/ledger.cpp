#include "ledger.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sluice::torture {

Ledger::Ledger(const std::string& path, bool durable)
    : path_(path),
      fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)),
      durable_(durable) {
  if (fd_ < 0) {
    throw std::runtime_error("Ledger: cannot open " + path + ": " + std::strerror(errno));
  }
}

Ledger::~Ledger() { ::close(fd_); }

void Ledger::append(const std::string& id) {
  const std::string line = id + "\n";
  if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    throw std::runtime_error("Ledger: appending to " + path_ + " failed: " + std::strerror(errno));
  }
  if (durable_ && ::fdatasync(fd_) != 0) {
    throw std::runtime_error("Ledger: syncing " + path_ + " failed: " + std::strerror(errno));
  }
}

std::vector<std::string> Ledger::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> ids;
  const std::string all = text.str();
  std::size_t start = 0;
  for (std::size_t nl = all.find('\n'); nl != std::string::npos; nl = all.find('\n', start)) {
    ids.push_back(all.substr(start, nl - start));
    start = nl + 1;
  }
  return ids;
}

}  // namespace sluice::torture
