// sluice_consumer_pause and sluice_consumer_resume: pause.hpp, for C.
#include "sluice/pause.hpp"

#include "database_handle.hpp"
#include "result_codes.hpp"
#include "sluice/sluice.h"

extern "C" {

int sluice_consumer_pause(sluice_db* db, const char* consumer, int64_t until_ms, const char* note,
                          char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_consumer_pause");
    require(consumer, "sluice_consumer_pause: consumer is NULL");
    sluice::PauseOptions pause;
    if (until_ms != 0) pause.until = sluice::TimePoint(sluice::Duration(until_ms));
    if (note != nullptr) pause.note = note;
    sluice::pause_consumer(use.db(), consumer, pause);
  });
}

int sluice_consumer_resume(sluice_db* db, const char* consumer, int* was_paused, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_consumer_resume");
    require(consumer, "sluice_consumer_resume: consumer is NULL");
    const bool resumed = sluice::resume_consumer(use.db(), consumer);
    if (was_paused != nullptr) *was_paused = resumed ? 1 : 0;
  });
}

}  // extern "C"
