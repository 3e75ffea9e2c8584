// A worker instance driven through the C API (sluice.h): a sluice_worker on a connection of its
// own, beside the C++ Workers on the same file, with C handlers that do what the CallSink says.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "instance.hpp"
#include "sequence_config.hpp"
#include "worker_instance.hpp"

struct sluice_worker;

namespace sluice::model {

// Not thread-safe, like the sluice_worker it holds. Reads the system clock (the C API takes no
// other): only for a seam sequence, with config.retry as the C API can give it.
class CWorkerInstance final : public Instance {
 public:
  CWorkerInstance(const std::string& path, const SequenceConfig& config,
                  const InstanceConfig& instance, CallSink& sink);
  ~CWorkerInstance() override;
  CWorkerInstance(const CWorkerInstance&) = delete;
  CWorkerInstance& operator=(const CWorkerInstance&) = delete;

  DrainResult drain() override;
  // From inside the next handler call of a drain, another thread calls sluice_worker_start on
  // this worker, which delivers in run_until_idle: it must be refused with SLUICE_INVALID.
  // Returns what happened ("" if no handler was called), after the drain.
  std::string drain_probing_start(DrainResult& result);
  // Called by the C handlers at the start of every call.
  void on_handler_call();
  std::optional<long long> write_transactions() const override { return std::nullopt; }

  // What a C handler needs: passed as its user_data.
  struct Subscription {
    CallSink* sink;
    std::string consumer;
    int generation;
    bool outside;
    CWorkerInstance* owner;
  };

 private:
  sluice_worker* worker_ = nullptr;
  bool probe_start_ = false;
  std::string probe_result_;
  std::vector<std::unique_ptr<Subscription>> subscriptions_;
};

}  // namespace sluice::model
