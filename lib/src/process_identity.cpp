#include "process_identity.hpp"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <vector>

namespace sluice {
namespace {

enum class Liveness { kAlive, kDead, kUnknown };

// Where this process runs, as far as it can read it; a field it cannot read is empty.
struct Place {
  std::string boot_id;        // differs after every boot
  std::string pid_namespace;  // the inode of /proc/self/ns/pid
};

std::string read_link(const char* path) {
  char target[PATH_MAX];
  const ssize_t length = readlink(path, target, sizeof target);
  return length > 0 ? std::string(target, static_cast<std::size_t>(length)) : std::string();
}

Place this_place() {
  Place place;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::getline(boot, place.boot_id);
  // A /proc mounted for another PID namespace numbers processes otherwise than kill() does, so
  // it cannot tell whether one of our pids runs: the namespace then counts as unreadable.
  if (read_link("/proc/self") != std::to_string(getpid())) return place;
  const std::string ns = read_link("/proc/self/ns/pid");  // "pid:[4026531836]"
  const auto open = ns.find('[');
  const auto close = ns.find(']');
  if (open != std::string::npos && close != std::string::npos && close > open + 1) {
    place.pid_namespace = ns.substr(open + 1, close - open - 1);
  }
  return place;
}

// Reads field 3 (the state) and field 22 (the start time in clock ticks since boot) of
// /proc/PID/stat. False if it cannot: the process is gone, hidden (hidepid) or /proc is missing.
bool read_stat(long long pid, std::string& state, std::string& started) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');  // the command name may contain spaces
  if (paren == std::string::npos || paren + 2 > text.size()) return false;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3) state = field;
    if (i == 22) {
      started = field;
      return true;
    }
  }
  return false;
}

// Whether process `pid` of this PID namespace, started at `started`, still runs.
Liveness process_liveness(long long pid, const std::string& started) {
  if (pid <= 0 || started.empty()) return Liveness::kUnknown;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return Liveness::kDead;
  // A process with this pid exists (EPERM: one we may not signal). Its start time tells whether
  // it is the owner or a later process that reused the pid.
  std::string state;
  std::string now_started;
  if (!read_stat(pid, state, now_started)) return Liveness::kUnknown;
  // A zombie was killed and not yet reaped: it never runs again.
  if (state == "Z" || state == "X") return Liveness::kDead;
  return now_started == started ? Liveness::kAlive : Liveness::kDead;
}

struct LiveWorkers {
  std::mutex mutex;
  std::set<std::string> owners;
};

LiveWorkers& live_workers() {
  static auto* workers = new LiveWorkers;
  return *workers;
}

std::vector<std::string> split_owner(const std::string& owner) {
  std::vector<std::string> fields;
  std::string::size_type from = 0;
  for (auto colon = owner.find(':'); colon != std::string::npos; colon = owner.find(':', from)) {
    fields.push_back(owner.substr(from, colon - from));
    from = colon + 1;
  }
  fields.push_back(owner.substr(from));
  return fields;
}

Liveness owner_liveness(const std::string& owner) {
  const std::vector<std::string> fields = split_owner(owner);
  if (fields.size() != 3 && fields.size() != 5) return Liveness::kUnknown;
  const long long pid = std::atoll(fields[0].c_str());
  const std::string& started = fields[1];
  const Place here = this_place();
  if (fields.size() == 3) {
    // Written before the boot and namespace were recorded: a process of this namespace that
    // matches it is the owner, but no match proves nothing (it may have run elsewhere).
    const bool alive =
        !here.pid_namespace.empty() && process_liveness(pid, started) == Liveness::kAlive;
    return alive ? Liveness::kAlive : Liveness::kUnknown;
  }
  const std::string& boot = fields[3];
  const std::string& pid_namespace = fields[4];
  if (boot.empty() || here.boot_id.empty()) return Liveness::kUnknown;
  if (boot != here.boot_id) return Liveness::kDead;  // no process outlives its boot
  if (pid_namespace.empty() || pid_namespace != here.pid_namespace) return Liveness::kUnknown;
  if (pid == getpid()) {
    std::lock_guard lock(live_workers().mutex);
    return live_workers().owners.count(owner) > 0 ? Liveness::kAlive : Liveness::kDead;
  }
  return process_liveness(pid, started);
}

}  // namespace

WorkerIdentity::WorkerIdentity() {
  // Not cached: a forked child is another process.
  const Place place = this_place();
  std::string state;
  std::string started;
  read_stat(getpid(), state, started);
  std::random_device device;
  std::ostringstream owner;
  owner << getpid() << ':' << started << ':' << std::hex
        << ((static_cast<unsigned long long>(device()) << 32) | device()) << ':' << place.boot_id
        << ':' << place.pid_namespace;
  owner_ = owner.str();
  std::lock_guard lock(live_workers().mutex);
  live_workers().owners.insert(owner_);
}

WorkerIdentity::~WorkerIdentity() {
  std::lock_guard lock(live_workers().mutex);
  live_workers().owners.erase(owner_);
}

long long WorkerIdentity::pid() const { return getpid(); }

bool claim_abandoned(const std::string& owner, TimePoint lease_until, TimePoint now) {
  const Liveness liveness = owner_liveness(owner);
  return liveness == Liveness::kDead || (liveness == Liveness::kUnknown && lease_until < now);
}

}  // namespace sluice
