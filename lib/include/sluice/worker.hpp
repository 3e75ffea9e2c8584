// The worker: delivers events from the file to registered handlers.
#pragma once

#include <SQLiteCpp/Database.h>

#include <memory>
#include <string>
#include <vector>

#include "sluice/consumer.hpp"
#include "sluice/options.hpp"

namespace sluice {

// What one run_until_idle() call did.
struct DrainResult {
  // Handler calls that returned normally (or events already seen, skipped).
  long long delivered = 0;
  // Failed attempts scheduled for a retry, and snoozes.
  long long retried = 0;
  // Events dead-lettered.
  long long dead_lettered = 0;
};

// Thread-safe in this sense: start(), stop(), subscribe() and run_until_idle() may be called from
// any thread, and the worker's connection is only ever driven by one thread at a time (the
// worker's own, or the one in run_until_idle()). What would drive it from two threads is refused
// with InvalidArgument: start() while run_until_idle() delivers, run_until_idle() while started
// or already delivering on another thread, subscribe() during either. The destructor must not
// run while another thread is inside a call. Where the worker cannot hold its liveness lock
// (see Options::claim_lease), one more thread renews its claims' lease on a connection of its
// own.
class Worker {
 public:
  // Opens its own connection to `path` (created and migrated if needed). Throws InvalidArgument
  // for ":memory:" or "": that would be a second, empty database; pass the app's in-memory
  // connection to Worker(SQLite::Database&) instead.
  explicit Worker(const std::string& path, Options options = {});
  // Uses the caller's connection, e.g. for ":memory:". Such a worker only delivers in
  // run_until_idle(); start() throws TransactionError. `db` must outlive the worker.
  Worker(SQLite::Database& db, Options options = {});
  // Stops the worker if started.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Registers `handler` for `topic` under consumer `consumer`, recording the consumer and its
  // subscription in the file (so other processes see them). A consumer may take several topics;
  // several consumers may take one topic. `options` must be the same on every call for one
  // consumer. Throws InvalidArgument on an empty name or topic, a mismatch, or a second handler
  // for the same (consumer, topic).
  void subscribe(const std::string& consumer, const std::string& topic, Handler handler,
                 const ConsumerOptions& options = {});

  // As subscribe(), for an outside-transaction consumer that takes whole batches.
  void subscribe_batch(const std::string& consumer, const std::string& topic, BatchHandler handler,
                       ConsumerOptions options = {});

  // As subscribe_batch() for each of `topics`, with the one handler for them all: its batches
  // then hold events of any of them, in file order (with a handler per topic, a batch ends at
  // every change of topic, so alternating topics cost a call and a commit per event). Throws
  // InvalidArgument, having recorded nothing, for an empty list, a topic listed twice, or one that
  // has a handler of this consumer already. A name of its own: an overload of subscribe_batch
  // made subscribe_batch(c, {"a", "b"}, h) ambiguous (std::string has a two-iterator constructor).
  void subscribe_batch_topics(const std::string& consumer, const std::vector<std::string>& topics,
                              BatchHandler handler, ConsumerOptions options = {});

  // Starts delivering on a background thread. It wakes at once on a commit made through an
  // Outbox in this process and, on Linux, when the kernel reports the file changed; it polls for
  // other processes' commits every poll_interval where the kernel cannot tell (see README).
  void start();

  // Finishes the batch in hand, leaves nothing claimed, and joins the thread. Idempotent.
  void stop();

  // Delivers in the calling thread until nothing is due at the clock's current time.
  DrainResult run_until_idle();

  // The worker's connection. For tests and tools; not while started.
  SQLite::Database& db();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
