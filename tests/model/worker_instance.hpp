// One worker instance of a model sequence: a Worker on its own connection to the sequence's file,
// with handlers for the topics its InstanceConfig names. The handlers ask a CallSink what to do
// and do it; in-transaction handlers record each application through ctx.db() in the app table
// model_applied, so a rolled-back application leaves no row.
#pragma once

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "handler_script.hpp"
#include "instance.hpp"
#include "sequence_config.hpp"
#include "sluice/worker.hpp"
#include "write_counter.hpp"

namespace sluice::model {

// Decides, for each handler call the engine makes, what the handler does.
class CallSink {
 public:
  virtual ~CallSink() = default;
  // A plain handler's call; `generation` is that of the consumer the handler was subscribed for
  // (ConsumerConfig::generation); `attempt` is the Context's; `connection` that of the delivery
  // transaction it runs in, or null for an outside-transaction consumer.
  virtual Scripted on_call(const std::string& consumer, int generation, const Event& event,
                           int attempt, const void* connection) = 0;
  // A write transaction ended on a connection that on_call has named.
  virtual void on_transaction_end(const void* connection, bool committed) = 0;
  // A batch handler's call: one outcome per event.
  virtual std::vector<Scripted> on_batch(const std::string& consumer, int generation,
                                         const std::vector<Event>& events) = 0;
};

// The app table the in-transaction handlers write.
void create_applied_table(SQLite::Database& db);

// The event number a model event carries in its payload.
long long event_number(const Event& event);

// Records in model_applied, on `connection` (in its open delivery transaction), that `consumer`
// applied event `n`.
void record_application(sqlite3* connection, const std::string& consumer, long long n);

// Has the end of every write transaction on `connection` reported to `sink`. One watch per
// connection, kept for the sequence's life (a connection opened later at the same address reuses
// it).
void watch_transaction(sqlite3* connection, CallSink& sink);

// Registers on `worker` the handlers `instance` has, as `config` describes the consumers.
void subscribe_handlers(Worker& worker, const SequenceConfig& config,
                        const InstanceConfig& instance, CallSink& sink);

// Not thread-safe, like the Worker it holds.
class WorkerInstance final : public Instance {
 public:
  WorkerInstance(const std::string& path, const SequenceConfig& config,
                 const InstanceConfig& instance, const Options& options, CallSink& sink);

  DrainResult drain() override { return worker_.run_until_idle(); }
  std::optional<long long> write_transactions() const override { return counter_.begins(); }

 private:
  SQLite::Database db_;
  WriteCounter counter_;
  Worker worker_;
};

}  // namespace sluice::model
