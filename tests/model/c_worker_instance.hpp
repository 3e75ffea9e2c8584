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
  std::optional<long long> write_transactions() const override { return std::nullopt; }

  // What a C handler needs: passed as its user_data.
  struct Subscription {
    CallSink* sink;
    std::string consumer;
    int generation;
    bool outside;
  };

 private:
  sluice_worker* worker_ = nullptr;
  std::vector<std::unique_ptr<Subscription>> subscriptions_;
};

}  // namespace sluice::model
