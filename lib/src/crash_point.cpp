#include "crash_point.hpp"

#ifdef SLUICE_TEST_HOOKS
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice::testing {
namespace {

struct CrashTarget {
  std::string name;
  long long hit = 1;
};

const CrashTarget* crash_target() {
  static const CrashTarget* target = []() -> const CrashTarget* {
    const char* spec = std::getenv("SLUICE_CRASH_AT");
    if (spec == nullptr || *spec == '\0') return nullptr;
    auto* t = new CrashTarget;
    const char* colon = std::strchr(spec, ':');
    t->name = colon ? std::string(spec, colon) : std::string(spec);
    if (colon) t->hit = std::atoll(colon + 1);
    return t;
  }();
  return target;
}

}  // namespace

void crash_point(const char* name) {
  const CrashTarget* target = crash_target();
  if (target == nullptr || target->name != name) return;
  static std::atomic<long long> hits{0};
  if (++hits == target->hit) std::abort();
}

}  // namespace sluice::testing
#endif
