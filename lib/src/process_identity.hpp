// Who owns a claim, and whether that owner is still alive. sluice is for one machine, so a claim's
// owner is a process (pid and start time, against pid reuse) plus a worker token within it.
#pragma once

#include <string>

namespace sluice {

// Thread-safe. Registers a live worker for the lifetime of the object.
class WorkerIdentity {
 public:
  WorkerIdentity();
  ~WorkerIdentity();
  WorkerIdentity(const WorkerIdentity&) = delete;
  WorkerIdentity& operator=(const WorkerIdentity&) = delete;

  // "pid:start time:token"
  const std::string& owner() const { return owner_; }
  long long pid() const;

 private:
  std::string owner_;
};

// True while the worker that wrote `owner` may still be running: its process exists with the
// same start time and, for this process, the worker object still exists.
bool owner_alive(const std::string& owner);

}  // namespace sluice
