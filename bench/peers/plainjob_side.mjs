// The plainjob side of sluice-peers-bench (bench/peers_main.cpp): the same workload as its sluice
// side, on plainjob over better-sqlite3 with plainjob's own settings (it sets WAL, synchronous
// NORMAL and a 5 s busy timeout on the connection it is given).
//
// Usage: node plainjob_side.mjs CONFIG, CONFIG being a JSON object: {"path": a database file that
// does not exist yet, "jobs": how many, "topic", "domain_schema": the domain table's SQL of
// bench/workload.hpp}. Prints one JSON object of figures on stdout; exits non-zero on any error.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import Database from "better-sqlite3";
import { better, defineQueue, defineWorker } from "plainjob";

const require = createRequire(import.meta.url);
const config = JSON.parse(process.argv[2]);

// plainjob's default logger is the console, which would print a debug line per job to stdout:
// that is not the work measured, so debug and info go nowhere.
const logger = { debug() {}, info() {}, warn: console.warn, error: console.error };

// The payloads of bench/workload.cpp's sample_payloads(), byte for byte once JSON.stringify (the
// default serializer) has written them: job n carries payload n % 1024.
function payload(n) {
  return {
    order_id: n,
    customer: `c-${String(n % 1000000).padStart(6, "0")}`,
    amount_cents: 100 + (n % 99900),
    currency: "EUR",
    items: 1 + (n % 9),
    note: "bench",
  };
}

// Nanoseconds this thread has waited for a CPU that other processes held (the second field of
// /proc/thread-self/schedstat), as bench/stopwatch.hpp reads it; 0 where the kernel does not say.
// better-sqlite3 and plainjob do all their work on this one thread.
function runqueueWaitNs() {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[1]);
  } catch {
    return 0;
  }
}

// Returns a function that measures the time since, as bench/stopwatch.hpp does: in wall time, and in wall
// time less what other processes took from it (waits for the disk still count).
function stopwatch() {
  const began = process.hrtime.bigint();
  const waitedBefore = runqueueWaitNs();
  return () => {
    const wall = Number(process.hrtime.bigint() - began) / 1e9;
    return { wall, unstolen: wall - (runqueueWaitNs() - waitedBefore) / 1e9 };
  };
}

const db = new Database(config.path);
const queue = defineQueue({ connection: better(db), logger });
db.exec(config.domain_schema);
// workload.hpp's kInsertDomainRow, with the anonymous parameters better-sqlite3 binds in order.
const insertDomainRow = db.prepare("INSERT INTO bench_domain(event_id, payload) VALUES(?, ?)");

const jobs = [];
for (let n = 0; n < config.jobs; n++) jobs.push(payload(n % 1024));

const enqueueWatch = stopwatch();
queue.addMany(config.topic, jobs);
const enqueueSeconds = enqueueWatch();

let completed = 0;
let processWatch;
let processSeconds;
const worker = defineWorker(
  config.topic,
  async (job) => {
    insertDomainRow.run(String(job.id), job.data);
  },
  {
    queue,
    logger,
    onCompleted() {
      if (++completed === config.jobs) {
        processSeconds = processWatch();
        void worker.stop();
      }
    },
    onFailed(job, error) {
      throw new Error(`plainjob: job ${job.id} failed: ${error}`);
    },
  },
);
processWatch = stopwatch();
await worker.start();

const count = (sql) => db.prepare(sql).pluck().get();
const figures = {
  jobs: config.jobs,
  enqueue_seconds: enqueueSeconds.wall,
  enqueue_unstolen_seconds: enqueueSeconds.unstolen,
  process_seconds: processSeconds.wall,
  process_unstolen_seconds: processSeconds.unstolen,
  done: count("SELECT count(*) FROM plainjob_jobs WHERE status = 2"),
  domain_rows: count("SELECT count(*) FROM bench_domain"),
  payload_bytes: count("SELECT coalesce(sum(length(data)), 0) FROM plainjob_jobs"),
  journal_mode: db.pragma("journal_mode", { simple: true }),
  synchronous: db.pragma("synchronous", { simple: true }),
  sqlite_version: count("SELECT sqlite_version()"),
  better_sqlite3: require("better-sqlite3/package.json").version,
  plainjob: require("plainjob/package.json").version,
};
queue.close();
process.stdout.write(`${JSON.stringify(figures)}\n`);
