#include <doctest/doctest.h>

#include <stdexcept>
#include <thread>

#include "handler_thread.hpp"

using sluice::HandlerThread;

TEST_CASE("a handler thread runs each job on one thread of its own and hands back its error") {
  HandlerThread helper;
  std::thread::id first;
  std::thread::id second;
  helper.run([&] { first = std::this_thread::get_id(); });
  CHECK(helper.wait() == nullptr);
  helper.run([&] { second = std::this_thread::get_id(); });
  CHECK(helper.wait() == nullptr);
  CHECK(first != std::this_thread::get_id());
  CHECK(first == second);

  helper.run([] { throw std::runtime_error("job failed"); });
  std::exception_ptr error = helper.wait();
  REQUIRE(error != nullptr);
  CHECK_THROWS_WITH(std::rethrow_exception(error), "job failed");
  helper.run([] {});
  CHECK(helper.wait() == nullptr);
}

TEST_CASE("destroying a handler thread joins it, used or not") {
  { HandlerThread unused; }
  int runs = 0;
  {
    HandlerThread helper;
    helper.run([&] { ++runs; });
    helper.wait();
  }
  CHECK(runs == 1);
}
