// sluice_enqueue: the C++ sluice::enqueue on a connection the app holds.
#include "borrowed_connection.hpp"
#include "new_event.hpp"
#include "result_codes.hpp"
#include "sluice/error.hpp"
#include "sluice/outbox.hpp"
#include "sluice/sluice.h"

extern "C" {

int sluice_enqueue(sqlite3* conn, const sluice_new_event* event, sluice_enqueued* result,
                   char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    require(conn, "sluice_enqueue: conn is NULL");
    require(event, "sluice_enqueue: event is NULL");
    const sluice::EnqueueResult enqueued =
        sluice::enqueue(borrowed_database(conn), to_new_event(*event));
    if (result == nullptr) return;
    char* id = copy_string(enqueued.id);
    if (id == nullptr) throw std::bad_alloc();
    *result = {.status = status_code(enqueued.status), .seq = enqueued.seq, .id = id};
  });
}

}  // extern "C"
