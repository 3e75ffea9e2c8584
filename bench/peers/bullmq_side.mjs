// The BullMQ side of sluice-peers-bench (bench/peer_cases.cpp): the same workload as its sluice
// side, on BullMQ over a redis-server the bench started, with a handler that inserts one row into
// the app's SQLite file through better-sqlite3. BullMQ keeps its own defaults (one job at a
// time per worker, completed jobs kept).
//
// Usage: node bullmq_side.mjs CONFIG, CONFIG being a JSON object: {"path": the app's database
// file, which does not exist yet, "synchronous": "NORMAL" or "FULL" for it (WAL either way),
// "jobs": how many, "topic", "domain_schema": the domain table's SQL of bench/workload.hpp,
// "redis_port": where redis-server listens on 127.0.0.1, "redis_pid": its process}. Prints one
// JSON object of figures on stdout; exits non-zero on any error.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import Database from "better-sqlite3";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";

const require = createRequire(import.meta.url);
const config = JSON.parse(process.argv[2]);
// No reconnecting: the bench's redis-server gone is the end of the run, not an outage to wait out
// (ioredis would otherwise retry for ever and the bench hang).
const connection = { host: "127.0.0.1", port: config.redis_port, retryStrategy: () => null };
// One queue of a fresh server; BullMQ's name for a queue is free, the topic reads well.
const queueName = config.topic;

// The payloads of bench/workload.cpp's sample_payloads(), byte for byte once JSON.stringify has
// written them: job n carries payload n % 1024.
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

// Nanoseconds a thread has waited for a CPU that other processes held (the second field of a
// schedstat file), as bench/stopwatch.hpp reads it; 0 where the kernel does not say.
function runqueueWaitNs(file) {
  try {
    return Number(readFileSync(file, "utf8").split(" ")[1]);
  } catch {
    return 0;
  }
}

// The threads whose run-queue waits a stopwatch subtracts. Node runs the handler, BullMQ and the
// Redis client on its one thread. While the worker runs one job at a time, Node and
// redis-server's main thread (every command, and with appendfsync always the fsync before it
// replies) take turns, so both threads' waits are subtracted; the bulk enqueue pipelines its
// commands, both run at once, and only Node's waits are (Redis's would count twice).
const nodeThread = ["/proc/thread-self/schedstat"];
const bothThreads = [...nodeThread, `/proc/${config.redis_pid}/schedstat`];

// Returns a function that measures the time since, in wall time and in wall time less what other
// processes took from `threads` (waits for the disk still count).
function stopwatch(threads) {
  const waited = () => threads.reduce((sum, file) => sum + runqueueWaitNs(file), 0);
  const began = process.hrtime.bigint();
  const waitedBefore = waited();
  return () => {
    const wall = Number(process.hrtime.bigint() - began) / 1e9;
    return { wall, unstolen: wall - (waited() - waitedBefore) / 1e9 };
  };
}

const db = new Database(config.path);
db.pragma("journal_mode = WAL");
db.pragma(`synchronous = ${config.synchronous === "FULL" ? "FULL" : "NORMAL"}`);
db.exec(config.domain_schema);
// workload.hpp's kInsertDomainRow, with the anonymous parameters better-sqlite3 binds in order.
const insertDomainRow = db.prepare("INSERT INTO bench_domain(event_id, payload) VALUES(?, ?)");

const queue = new Queue(queueName, { connection });
await queue.waitUntilReady();
const jobs = [];
for (let n = 0; n < config.jobs; n++) jobs.push({ name: config.topic, data: payload(n % 1024) });

const enqueueWatch = stopwatch(nodeThread);
await queue.addBulk(jobs);
const enqueueSeconds = enqueueWatch();

let completed = 0;
let failure;
let allDone;
const finished = new Promise((resolve) => {
  allDone = resolve;
});
const worker = new Worker(
  queueName,
  async (job) => {
    insertDomainRow.run(String(job.id), JSON.stringify(job.data));
  },
  { connection, autorun: false },
);
worker.on("completed", () => {
  if (++completed === config.jobs) allDone();
});
worker.on("failed", (job, error) => {
  failure = new Error(`bullmq: job ${job?.id} failed: ${error}`);
  allDone();
});
worker.on("error", (error) => {
  failure = error;
  allDone();
});
await worker.waitUntilReady();
const processWatch = stopwatch(bothThreads);
void worker.run();
await finished;
const processSeconds = processWatch();
await worker.close();
if (failure) throw failure;

const counts = await queue.getJobCounts("completed", "waiting", "active", "failed");
const count = (sql) => db.prepare(sql).pluck().get();
// The server's own word on its version and persistence, on a connection of the runner's.
const redis = new Redis(connection);
const info = await redis.info("server");
const appendfsync = await redis.config("GET", "appendfsync");
const appendonly = await redis.config("GET", "appendonly");
await redis.quit();
const figures = {
  jobs: config.jobs,
  enqueue_seconds: enqueueSeconds.wall,
  enqueue_unstolen_seconds: enqueueSeconds.unstolen,
  process_seconds: processSeconds.wall,
  process_unstolen_seconds: processSeconds.unstolen,
  done: counts.completed,
  left: counts.waiting + counts.active + counts.failed,
  domain_rows: count("SELECT count(*) FROM bench_domain"),
  payload_bytes: count("SELECT coalesce(sum(length(payload)), 0) FROM bench_domain"),
  journal_mode: db.pragma("journal_mode", { simple: true }),
  synchronous: db.pragma("synchronous", { simple: true }),
  sqlite_version: count("SELECT sqlite_version()"),
  redis_version: /redis_version:(\S+)/.exec(info)?.[1] ?? "?",
  appendonly: appendonly[1],
  appendfsync: appendfsync[1],
  better_sqlite3: require("better-sqlite3/package.json").version,
  bullmq: require("bullmq/package.json").version,
  ioredis: require("ioredis/package.json").version,
};
await queue.close();
db.close();
process.stdout.write(`${JSON.stringify(figures)}\n`);
