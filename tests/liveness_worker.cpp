// A worker process for the claim liveness tests (test_claim_liveness.cpp), run by them inside
// another PID namespace or over an empty /proc. Consumer "c" takes topic "t" outside the
// transaction, with no backoff. Prints "ready" once its worker has started and "called ID" as its
// handler starts on event ID.
//
// Usage: liveness_worker DB LEASE_MS MAX_ATTEMPTS hold FIFO [batch]
//        liveness_worker DB LEASE_MS MAX_ATTEMPTS drain WINDOW_MS
// hold:  the handler (a batch handler with "batch") then waits until the writer of FIFO closes
//        it; the process runs until it is killed.
// drain: the handler returns at once; the worker runs for WINDOW_MS, then the program prints
//        "done" and exits.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "sluice/sluice.hpp"

namespace {

void announce(const sluice::Event& event) { std::cout << "called " << event.id << std::endl; }

// Returns once the test has opened FIFO for writing and closed it again.
void wait_for_release(const std::string& fifo) {
  const int fd = open(fifo.c_str(), O_RDONLY);
  char byte;
  while (fd >= 0 && read(fd, &byte, 1) > 0) {
  }
  if (fd >= 0) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::cerr << "usage: liveness_worker DB LEASE_MS MAX_ATTEMPTS hold FIFO [batch]\n"
                 "       liveness_worker DB LEASE_MS MAX_ATTEMPTS drain WINDOW_MS\n";
    return 2;
  }
  const std::string path = argv[1];
  const std::string mode = argv[4];
  const std::string arg = argv[5];
  sluice::Options options;
  options.claim_lease = std::chrono::milliseconds(std::stoll(argv[2]));
  options.poll_interval = std::chrono::milliseconds(20);
  options.retry.max_attempts = std::stoi(argv[3]);
  options.retry.initial_backoff = std::chrono::milliseconds(0);
  options.retry.max_backoff = std::chrono::milliseconds(0);
  const sluice::ConsumerOptions consumer{.mode = sluice::DeliveryMode::kOutsideTransaction};

  sluice::Worker worker(path, options);
  if (mode == "hold" && argc > 6 && std::string(argv[6]) == "batch") {
    worker.subscribe_batch(
        "c", "t",
        [arg](const std::vector<sluice::Event>& events) {
          for (const sluice::Event& event : events) announce(event);
          wait_for_release(arg);
          return std::vector<sluice::Outcome>(events.size(), sluice::Outcome::done());
        },
        consumer);
  } else {
    worker.subscribe(
        "c", "t",
        [mode, arg](const sluice::Event& event, sluice::Context&) {
          announce(event);
          if (mode == "hold") wait_for_release(arg);
        },
        consumer);
  }
  worker.start();
  std::cout << "ready" << std::endl;
  if (mode == "drain") {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::stoll(arg)));
    worker.stop();
    std::cout << "done" << std::endl;
    return 0;
  }
  while (true) pause();
}
