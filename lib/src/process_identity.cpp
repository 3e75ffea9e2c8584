#include "process_identity.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

namespace sluice {
namespace {

// Field 22 of /proc/PID/stat: the process start time in clock ticks since boot; "" if the
// process is gone or a zombie (killed, not yet reaped: it will never run again).
std::string process_start_time(long long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');  // the command name may contain spaces
  if (paren == std::string::npos) return {};
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && (field == "Z" || field == "X")) return {};
    if (i == 22) return field;
  }
  return {};
}

struct LiveWorkers {
  std::mutex mutex;
  std::set<std::string> owners;
};

LiveWorkers& live_workers() {
  static auto* workers = new LiveWorkers;
  return *workers;
}

}  // namespace

WorkerIdentity::WorkerIdentity() {
  // Not cached: a forked child is another process.
  const std::string self = std::to_string(getpid()) + ":" + process_start_time(getpid());
  std::random_device device;
  std::ostringstream token;
  token << std::hex << ((static_cast<unsigned long long>(device()) << 32) | device());
  owner_ = self + ":" + token.str();
  std::lock_guard lock(live_workers().mutex);
  live_workers().owners.insert(owner_);
}

WorkerIdentity::~WorkerIdentity() {
  std::lock_guard lock(live_workers().mutex);
  live_workers().owners.erase(owner_);
}

long long WorkerIdentity::pid() const { return getpid(); }

bool owner_alive(const std::string& owner) {
  const auto first = owner.find(':');
  const auto second = owner.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos) return false;
  const long long pid = std::atoll(owner.substr(0, first).c_str());
  if (pid == getpid()) {
    std::lock_guard lock(live_workers().mutex);
    return live_workers().owners.count(owner) > 0;
  }
  if (pid <= 0 || (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
  const std::string started = process_start_time(pid);
  return !started.empty() && started == owner.substr(first + 1, second - first - 1);
}

}  // namespace sluice
