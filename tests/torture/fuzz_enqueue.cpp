// libFuzzer target (clang -fsanitize=fuzzer): hostile enqueue/receive input must be stored or
// refused with a sluice::Error, never crash or half-write.
#include <cstdio>
#include <cstdlib>

#include "hostile_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string problem = sluice::torture::check_hostile_input(data, size);
  if (!problem.empty()) {
    std::fprintf(stderr, "hostile input: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
