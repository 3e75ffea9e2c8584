// sluice_stats and sluice_metrics_text: what consumer_stats and metrics_text read, for C.
#include "sluice/stats.hpp"

#include <vector>

#include "database_handle.hpp"
#include "packed_rows.hpp"
#include "result_codes.hpp"
#include "sluice/sluice.h"

extern "C" {

int sluice_stats(sluice_db* db, sluice_consumer_stats** stats, size_t* count, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_stats");
    require(stats, "sluice_stats: stats (the out parameter) is NULL");
    require(count, "sluice_stats: count (the out parameter) is NULL");
    const std::vector<sluice::ConsumerStats> read = sluice::consumer_stats(use.db());
    std::size_t text_bytes = 0;
    for (const auto& one : read)
      text_bytes += PackedRows<sluice_consumer_stats>::bytes(one.consumer);
    PackedRows<sluice_consumer_stats> rows(read.size(), text_bytes);
    for (std::size_t i = 0; i < read.size(); ++i) {
      const sluice::ConsumerStats& one = read[i];
      rows.row(i) = {.consumer = rows.text(one.consumer),
                     .pending = one.pending,
                     .claimed = one.claimed,
                     .retrying = one.retrying,
                     .dead = one.dead,
                     .delivered_total = one.delivered_total,
                     .retries_total = one.retries_total,
                     .snoozed_total = one.snoozed_total,
                     .lag_ms = one.lag.count(),
                     .parked_keys = one.parked_keys,
                     .waiting_for_handler = one.waiting_for_handler};
    }
    *count = rows.size();
    *stats = rows.release();
  });
}

int sluice_stats_v2(sluice_db* db, sluice_consumer_stats_v2** stats, size_t* count, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_stats_v2");
    require(stats, "sluice_stats_v2: stats (the out parameter) is NULL");
    require(count, "sluice_stats_v2: count (the out parameter) is NULL");
    const std::vector<sluice::ConsumerStats> read = sluice::consumer_stats(use.db());
    std::size_t text_bytes = 0;
    for (const auto& one : read) {
      text_bytes += PackedRows<sluice_consumer_stats_v2>::bytes(one.consumer) +
                    PackedRows<sluice_consumer_stats_v2>::bytes(one.pause_note) +
                    PackedRows<sluice_consumer_stats_v2>::bytes(one.paused_by);
    }
    PackedRows<sluice_consumer_stats_v2> rows(read.size(), text_bytes);
    for (std::size_t i = 0; i < read.size(); ++i) {
      const sluice::ConsumerStats& one = read[i];
      rows.row(i) = {
          .consumer = rows.text(one.consumer),
          .pending = one.pending,
          .claimed = one.claimed,
          .retrying = one.retrying,
          .dead = one.dead,
          .delivered_total = one.delivered_total,
          .retries_total = one.retries_total,
          .snoozed_total = one.snoozed_total,
          .lag_ms = one.lag.count(),
          .parked_keys = one.parked_keys,
          .waiting_for_handler = one.waiting_for_handler,
          .throttled_total = one.throttled_total,
          .paused = one.paused ? 1 : 0,
          .paused_since_ms = one.paused ? one.paused_since.time_since_epoch().count() : 0,
          .paused_until_ms = one.paused_until ? one.paused_until->time_since_epoch().count() : 0,
          .pause_note = rows.text(one.pause_note),
          .paused_by = rows.text(one.paused_by)};
    }
    *count = rows.size();
    *stats = rows.release();
  });
}

int sluice_metrics_text(sluice_db* db, char** text, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_metrics_text");
    require(text, "sluice_metrics_text: text (the out parameter) is NULL");
    char* copy = copy_string(sluice::metrics_text(use.db()));
    if (copy == nullptr) throw std::bad_alloc();
    *text = copy;
  });
}

}  // extern "C"
