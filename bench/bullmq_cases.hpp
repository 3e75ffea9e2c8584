// Side by side with BullMQ (issue 32): what a Node developer picks instead of an embedded queue.
// The workload of peer_cases.hpp — enqueue N jobs in bulk, then a handler that inserts one row
// into the app's SQLite file — on sluice with synchronous FULL and on BullMQ (npm, run by Node.js
// from bench/peers) over a redis-server the bench starts and stops itself, in two configurations:
// Redis's default persistence (RDB snapshots, no append-only file) and `appendonly yes` with
// `appendfsync always`, the durability sluice's FULL gives (a completed job survives a power
// cut). The app's file is WAL with synchronous NORMAL beside the first and FULL beside the
// second, so that the handler's row is as durable as the job's completion.
#pragma once

#include "peer_cases.hpp"
#include "run.hpp"

namespace bench {

// Adds per Redis configuration a row for processing and one for the bulk enqueue, sluice FULL
// against BullMQ, each side's best of the run's rounds, sides alternating. The processing row
// beside appendfsync always has the target: sluice ahead (ratio >= 1). Times as in
// peer_cases.hpp; the BullMQ side's processing less the run-queue waits of both Node's thread
// and redis-server's main thread (they take turns), its enqueue less Node's (they overlap).
void run_bullmq_cases(Run& run, const PeerSettings& peers);

}  // namespace bench
