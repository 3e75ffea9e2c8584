// Who owns a claim, and whether that owner is still alive. sluice is for one machine, but the
// processes sharing a file may run in different PID namespaces (containers) or without a
// readable /proc. A claim's owner is therefore a process (pid and start time, against pid
// reuse), the boot and PID namespace it ran in, and a worker token within the process.
#pragma once

#include <string>

#include "sluice/clock.hpp"

namespace sluice {

// Thread-safe. Registers a live worker for the lifetime of the object.
class WorkerIdentity {
 public:
  WorkerIdentity();
  ~WorkerIdentity();
  WorkerIdentity(const WorkerIdentity&) = delete;
  WorkerIdentity& operator=(const WorkerIdentity&) = delete;

  // "pid:start time:token:boot id:PID namespace"; a field this process cannot read is empty.
  // Owners written before the boot and namespace were recorded are "pid:start time:token".
  const std::string& owner() const { return owner_; }
  long long pid() const;

 private:
  std::string owner_;
};

// True once the claim of `owner`, leased until `lease_until`, may be taken over at `now`: its
// owner is known to be gone (same boot and PID namespace as this process, and no process with its
// pid and start time, or no worker object of this process with its token; or another boot), or
// whether it lives cannot be known from here (another PID namespace, /proc unreadable on either
// side) and its lease has expired. A live owner renews the lease while it holds claims.
bool claim_abandoned(const std::string& owner, TimePoint lease_until, TimePoint now);

}  // namespace sluice
