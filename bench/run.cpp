#include "run.hpp"

#include <iostream>

namespace bench {

Run::Run(RunSettings settings) : settings_(std::move(settings)), scratch_(settings_.dir) {}

bool Run::wants(const std::string& name) const {
  return name.find(settings_.only) != std::string::npos;
}

void Run::add(Result result) {
  if (settings_.quick) result.met.reset();
  std::cerr << "sluice-bench: " << result.name;
  if (result.events_per_s)
    std::cerr << "  " << static_cast<long long>(*result.events_per_s) << "/s";
  if (result.ratio) std::cerr << "  ratio " << *result.ratio;
  if (result.latency) std::cerr << "  p99 " << result.latency->p99_ms << " ms";
  if (!result.note.empty()) std::cerr << "  " << result.note;
  std::cerr << std::endl;
  results_.push_back(std::move(result));
}

void Run::fail(const std::string& name, const std::string& error) {
  ++failed_;
  Result result;
  result.name = name;
  result.note = "FAILED: " + error;
  add(result);
}

bool Run::all_targets_met() const {
  for (const Result& result : results_) {
    if (result.met && !*result.met) return false;
  }
  return true;
}

}  // namespace bench
