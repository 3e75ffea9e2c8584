// sluice_backfill: re-feeding a consumer from retained history, from C.
#include "sluice/backfill.hpp"

#include "database_handle.hpp"
#include "result_codes.hpp"
#include "sluice/sluice.h"

extern "C" {

int sluice_backfill(sluice_db* db, const char* consumer, const char* from_event_id,
                    int64_t since_ms, int64_t until_ms, int64_t* queued, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_backfill");
    require(consumer, "sluice_backfill: consumer is NULL");
    sluice::BackfillRange range;
    if (from_event_id != nullptr) range.from_event_id = from_event_id;
    if (since_ms != 0) range.since = sluice::TimePoint(sluice::Duration(since_ms));
    if (until_ms != 0) range.until = sluice::TimePoint(sluice::Duration(until_ms));
    const long long done = sluice::backfill(use.db(), consumer, range);
    if (queued != nullptr) *queued = done;
  });
}

}  // extern "C"
