// sluice_enqueue: the C++ sluice::enqueue on a connection the app holds.
#include <string>

#include "borrowed_connection.hpp"
#include "new_event.hpp"
#include "result_codes.hpp"
#include "sluice/error.hpp"
#include "sluice/outbox.hpp"
#include "sluice/sluice.h"

namespace {

// Both versions of sluice_enqueue: `Event` is sluice_new_event or sluice_new_event_v2.
template <typename Event>
int enqueue(const char* function, sqlite3* conn, const Event* event, sluice_enqueued* result,
            char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(conn, (std::string(function) + ": conn is NULL").c_str());
    require(event, (std::string(function) + ": event is NULL").c_str());
    const sluice::EnqueueResult enqueued =
        sluice::enqueue(borrowed_database(conn), to_new_event(*event));
    if (result == nullptr) return;
    char* id = copy_string(enqueued.id);
    if (id == nullptr) throw std::bad_alloc();
    *result = {.status = status_code(enqueued.status), .seq = enqueued.seq, .id = id};
  });
}

}  // namespace

extern "C" {

int sluice_enqueue(sqlite3* conn, const sluice_new_event* event, sluice_enqueued* result,
                   char** errmsg) {
  return enqueue("sluice_enqueue", conn, event, result, errmsg);
}

int sluice_enqueue_v2(sqlite3* conn, const sluice_new_event_v2* event, sluice_enqueued* result,
                      char** errmsg) {
  return enqueue("sluice_enqueue_v2", conn, event, result, errmsg);
}

}  // extern "C"
