// Side by side with peers (issue 16): one workload, measured in one run on this machine, on
// sluice and on plainjob (npm) over better-sqlite3, run by Node.js from bench/peers. The
// workload: enqueue N jobs with workload.hpp's ~100-byte JSON payloads in one transaction, then
// process them with a handler that inserts one domain row into the same file. Each side keeps
// its own defaults; sluice's consumer runs in the delivery transaction, so it does strictly more
// per job (the domain row, the inbox row and the delivery state commit together), plainjob
// commits its claim, the handler's row and the job's state apart.
#pragma once

#include <string>

#include "run.hpp"

namespace bench {

struct PeerSettings {
  // The Node.js executable, looked up in PATH unless it holds a slash.
  std::string node = "node";
  // Where plainjob_side.mjs and bullmq_side.mjs are, with their node_modules installed (`npm ci`).
  std::string peers_dir;
  // Jobs per side and round (a quick run: its own small count).
  long long jobs = 50000;
  // Jobs per side and round in the BullMQ cases: fewer, as BullMQ with appendfsync always waits
  // for two fsyncs a job (Redis's and the app file's).
  long long bullmq_jobs = 5000;
  // The redis-server executable for the BullMQ cases, looked up in PATH unless it holds a slash.
  std::string redis_server = "redis-server";
};

// Adds a row for processing (target: sluice >= 25x plainjob's jobs per second) and one for the
// bulk enqueue (no target), each side's best of the run's rounds, sides alternating. Times are
// wall time less the time the working thread waited for a CPU that other processes held (as
// Stopwatch::unstolen_seconds; both sides do all their work on one thread), so that a busy
// machine slows neither side more than the other; waits for the disk count.
void run_peer_cases(Run& run, const PeerSettings& peers);

}  // namespace bench
