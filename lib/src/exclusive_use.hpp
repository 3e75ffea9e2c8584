// One thread at a time in the calls of an object that is not thread-safe.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "sluice/error.hpp"

namespace sluice {

// Refuses, rather than waits for or allows, a call on an object from a second thread while a
// first is inside one: two threads on one connection or one set of prepared statements interleave
// transactions and reset statements under each other (events lost, not merely slowed down), and a
// handle documented as one-thread-at-a-time has no business blocking a caller's thread either.
// The thread already inside may enter again (a handler or a trigger calling back into the object).
// Thread-safe.
class ExclusiveUse {
 public:
  // The calling thread's use of one ExclusiveUse for its lifetime.
  class Scope {
   public:
    // Enters `use` for the calling thread. Throws InvalidArgument, naming `what` (e.g.
    // "sluice: Outbox::enqueue"), while another thread is inside.
    Scope(ExclusiveUse& use, const char* what) : use_(use) {
      const std::thread::id self = std::this_thread::get_id();
      std::thread::id none{};
      if (use_.owner_.compare_exchange_strong(none, self)) {
        use_.depth_ = 1;
        return;
      }
      if (none != self) {
        throw InvalidArgument(std::string(what) +
                              ": refused, another thread is inside a call on the same object, "
                              "which takes one thread at a time (use one per thread)");
      }
      ++use_.depth_;
      nested_ = true;
    }
    ~Scope() {
      if (--use_.depth_ == 0) use_.owner_.store(std::thread::id{});
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

    // True when the calling thread was already inside (this is a call made from within a call).
    bool nested() const { return nested_; }

   private:
    ExclusiveUse& use_;
    bool nested_ = false;
  };

  // True while some thread is inside.
  bool busy() const { return owner_.load() != std::thread::id{}; }

 private:
  std::atomic<std::thread::id> owner_{};
  // Changed only by the owner.
  int depth_ = 0;
};

}  // namespace sluice
