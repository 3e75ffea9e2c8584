#include "console_cases.hpp"

#include <SQLiteCpp/Transaction.h>
#include <httplib.h>

#include <csignal>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

#include "latency_summary.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/outbox.hpp"
#include "sluice/worker.hpp"
#include "stopwatch.hpp"
#include "support/child_process.hpp"
#include "workload.hpp"

namespace bench {
namespace {

// Issue 32's targets: every call p50 <= 100 ms and p99 <= 200 ms on a 1M-event file.
constexpr double kTargetP50Ms = 100;
constexpr double kTargetP99Ms = 200;
constexpr int kTimedCalls = 20;
constexpr int kFailEvery = 100;
const char* const kTopics[] = {"order.placed", "order.paid", "user.created", "invoice.sent"};
// Three kinds of failure, so the dead letters form a few groups.
const char* const kErrors[] = {"order %lld rejected: card 'C-%lld' declined",
                               "timeout after %lld ms calling billing-%lld",
                               "customer %lld not found (shard %lld)"};

// The file: `events` spread evenly over the last week, every kFailEvery-th dead-lettered by
// consumer "billing". Returns the newest event's creation time.
sluice::TimePoint build_file(const std::string& path, long long events) {
  const auto now = sluice::system_clock()->now();
  const auto week = std::chrono::duration_cast<sluice::Duration>(std::chrono::hours(24 * 7));
  auto clock = std::make_shared<sluice::ManualClock>(now - week);
  sluice::Options options;
  options.synchronous = sluice::Synchronous::kNormal;
  options.clock = clock;
  const sluice::Duration step = week / events;
  const auto payloads = sample_payloads();
  {
    SQLite::Database db = sluice::open_database(path, options);
    sluice::Outbox outbox(db, options);
    for (long long i = 0; i < events;) {
      SQLite::Transaction tx(db);
      for (long long end = std::min(events, i + 1000); i < end; ++i) {
        sluice::NewEvent event;
        event.topic = kTopics[i % 4];
        event.key = "customer-" + std::to_string(i % 50'000);
        event.payload = i % kFailEvery == 0 ? R"({"fail":true,"n":)" + std::to_string(i) + "}"
                                            : payloads[i % payloads.size()];
        outbox.enqueue(event);
        clock->advance(step);
      }
      tx.commit();
    }
  }
  sluice::Options delivery;
  delivery.synchronous = sluice::Synchronous::kNormal;
  delivery.batch_size = 512;
  sluice::Worker worker(path, delivery);
  for (const char* topic : kTopics) {
    worker.subscribe("billing", topic,
                     [](const sluice::Event& event, sluice::Context&) {
                       if (event.payload.rfind(R"({"fail":true)", 0) != 0) return;
                       const long long n =
                           std::stoll(event.payload.substr(event.payload.rfind(':') + 1));
                       char error[128];
                       std::snprintf(error, sizeof error, kErrors[(n / kFailEvery) % 3], n, n % 97);
                       throw sluice::PermanentError(error);
                     },
                     {.start_from = sluice::StartFrom::kOldest});
  }
  worker.run_until_idle();
  return clock->now() - step;
}

long long millis(sluice::TimePoint t) { return t.time_since_epoch().count(); }

// Not thread-safe. `sluice console` on the file, stopped with SIGINT.
class Console {
 public:
  explicit Console(const std::string& path)
      : process_({SLUICE_CLI, "--db", path, "console", "--listen", "127.0.0.1:0"}) {
    using Stream = sluice::test::ChildProcess::Stream;
    if (!process_.wait_for_output(Stream::kOut, "(Ctrl-C to stop)", std::chrono::seconds(60))) {
      throw std::runtime_error("sluice console did not start: " + process_.err());
    }
    std::smatch match;
    const std::string announced = process_.out();
    if (!std::regex_search(announced, match, std::regex(":(\\d+)/ serving"))) {
      throw std::runtime_error("sluice console: no port in '" + announced + "'");
    }
    client_ = std::make_unique<httplib::Client>("127.0.0.1", std::stoi(match[1]));
    client_->set_read_timeout(120);
    csrf_ = nlohmann::json::parse(call("GET", "/api/session", ""))["csrf_token"];
  }
  ~Console() {
    process_.signal(SIGINT);
    process_.wait(std::chrono::seconds(30));
  }

  // The answer's body; throws unless 200.
  std::string call(const std::string& method, const std::string& path, const std::string& body) {
    auto answer = method == "GET" ? client_->Get(path.c_str())
                                  : client_->Post(path.c_str(), {{"X-CSRF-Token", csrf_}}, body,
                                                  "application/json");
    if (!answer || answer->status != 200) {
      throw std::runtime_error(method + " " + path + ": " +
                               (answer ? std::to_string(answer->status) + " " + answer->body
                                       : httplib::to_string(answer.error())));
    }
    return answer->body;
  }

 private:
  sluice::test::ChildProcess process_;
  std::unique_ptr<httplib::Client> client_;
  std::string csrf_;
};

struct Call {
  std::string label;
  std::string method;
  std::string path;
  std::string body;
};

}  // namespace

void run_console_cases(Run& run) {
  const std::string& only = run.settings().only;
  if (!only.empty() && only.find("console") == std::string::npos) return;
  const long long events = run.size(1'000'000, 20'000);
  const std::string count = events % 1'000'000 == 0 ? std::to_string(events / 1'000'000) + "M"
                                                    : std::to_string(events / 1'000) + "k";
  run.guarded("console API " + count, [&] {
    const std::string path =
        run.scratch().fresh_database("console", file_storage(sluice::Synchronous::kNormal));
    std::fprintf(stderr, "console: building a %s-event file with %lld dead letters\n",
                 count.c_str(), events / kFailEvery);
    const sluice::TimePoint newest = build_file(path, events);
    Console console(path);
    const auto dead = nlohmann::json::parse(console.call("GET", "/api/dead-letters", ""));
    const std::string dead_id = dead["letters"][0]["event_id"];
    const std::string fingerprint = dead["groups"][0]["fingerprint"];
    const std::string hour_ago = std::to_string(millis(newest - std::chrono::hours(1)));
    const std::vector<Call> calls = {
        {"overview", "GET", "/api/overview", ""},
        {"history", "GET", "/api/history", ""},
        {"events page 1", "GET", "/api/events?limit=50", ""},
        {"events page at 90% (keyset)", "GET",
         "/api/events?limit=50&after_seq=" + std::to_string(events * 9 / 10), ""},
        {"events by topic, mid-file", "GET",
         "/api/events?topic=order.paid&limit=50&after_seq=" + std::to_string(events / 2), ""},
        {"events by key", "GET", "/api/events?key=customer-4242", ""},
        {"events of the last hour", "GET", "/api/events?limit=50&since=" + hour_ago, ""},
        {"events of a week", "GET", "/api/events?limit=50&since=7d", ""},
        {"event detail", "GET", "/api/events/" + dead_id, ""},
        {"dead letters, all groups", "GET", "/api/dead-letters", ""},
        {"dead letters of a group, page 2", "GET",
         "/api/dead-letters?fingerprint=" + httplib::detail::encode_query_param(fingerprint) +
             "&after=" + std::to_string(events / 2),
         ""},
        {"audit", "GET", "/api/audit", ""},
        {"replay dry run of a group", "POST", "/api/dead-letters/replay",
         nlohmann::json{{"fingerprint", fingerprint}, {"dry_run", true}}.dump()},
        {"backfill preview, last hour", "POST", "/api/backfill",
         nlohmann::json{{"consumer", "billing"}, {"since", hour_ago}, {"dry_run", true}}.dump()},
        {"prune preview", "POST", "/api/prune",
         nlohmann::json{{"older_than", "3d"}, {"force", true}, {"dry_run", true}}.dump()},
    };
    for (const Call& call : calls) {
      const std::string name = "console " + call.label + " " + count;
      if (!run.wants(name)) continue;
      run.guarded(name, [&] {
        console.call(call.method, call.path, call.body);  // warm the page cache
        std::vector<double> ms;
        for (int i = 0; i < kTimedCalls; ++i) {
          Stopwatch stopwatch;
          console.call(call.method, call.path, call.body);
          ms.push_back(stopwatch.seconds() * 1000);
        }
        Result result;
        result.name = name;
        result.events = events;
        result.latency = summarize_latencies(ms);
        result.target = "p50 <= 100, p99 <= 200 ms";
        result.met =
            result.latency->p50_ms <= kTargetP50Ms && result.latency->p99_ms <= kTargetP99Ms;
        result.note = call.method + " " + call.path.substr(0, call.path.find('?'));
        run.add(result);
      });
    }
  });
}

}  // namespace bench
