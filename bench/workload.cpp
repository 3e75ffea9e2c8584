#include "workload.hpp"

#include <cstdio>

namespace bench {

std::vector<std::string> sample_payloads() {
  std::vector<std::string> payloads;
  for (long long n = 0; n < 1024; ++n) {
    char buffer[160];
    int length = std::snprintf(buffer, sizeof buffer,
                               R"({"order_id":%lld,"customer":"c-%06lld","amount_cents":%lld,)"
                               R"("currency":"EUR","items":%lld,"note":"bench"})",
                               n, n % 1000000, 100 + n % 99900, 1 + n % 9);
    payloads.emplace_back(buffer, static_cast<std::size_t>(length));
  }
  return payloads;
}

}  // namespace bench
