// A worker instance of SQL consumers: a sqlite3 connection of the model process with the loadable
// extension (sqlext/, docs/sql.md), which claims with sluice_claim and settles each event with
// sluice_done (in one transaction with the app's write) or sluice_fail, as an app in another
// language would.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "instance.hpp"
#include "sequence_config.hpp"
#include "worker_instance.hpp"

namespace sluice::model {

// The path of the loadable extension, from the environment variable SLUICE_MODEL_SQLEXT
// (tests/model/meson.build sets it); "" when unset: the extension is not built under sanitizers.
std::string sql_extension();

// Not thread-safe: one connection, driven by the sequence's thread. The extension reads the
// system clock: only for a seam sequence. Drives only the consumers SQL can (unordered,
// in-transaction): its InstanceConfig names no other.
class SqlInstance final : public Instance {
 public:
  SqlInstance(const std::string& path, const SequenceConfig& config, const InstanceConfig& instance,
              CallSink& sink, std::string extension);
  ~SqlInstance() override;
  SqlInstance(const SqlInstance&) = delete;
  SqlInstance& operator=(const SqlInstance&) = delete;

  DrainResult drain() override;
  // Not counted: sluice_claim is a write command, run in a write transaction of its own even when
  // nothing is due.
  std::optional<long long> write_transactions() const override { return std::nullopt; }

  // Claims events of the first consumer that has any due, settles the first `settle` of them
  // (fewer if fewer were claimed), and leaves the rest: with `release`, gives them back with
  // sluice_release (which must say how many); else closes the connection with them claimed, as
  // a process whose connection closes mid-claim, and opens a new one. Returns the event numbers
  // left, with the consumer's name (empty when nothing was claimed).
  std::pair<std::string, std::vector<long long>> leave_mid_claim(std::size_t settle, bool release);

 private:
  struct Claimed {
    std::string id;
    long long n = 0;
    int attempt = 0;
  };
  void open();
  std::vector<Claimed> claim(const std::string& consumer);
  // Settles one claimed event as the script says; counts it into `result`. Returns false when it
  // throttled (sluice_throttle): the app hands no more of the claim over and releases the rest.
  bool settle(const std::string& consumer, const Claimed& event, DrainResult& result);

  const std::string path_;
  const SequenceConfig& config_;
  const InstanceConfig& instance_;
  CallSink& sink_;
  const std::string extension_;
  sqlite3* db_ = nullptr;
};

}  // namespace sluice::model
