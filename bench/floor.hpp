// The floor: plain SQL through the sqlite3 C API doing the row work sluice must do anyway, with
// sluice's pragmas and statements prepared once. Sluice's figures are ratios against it.
#pragma once

#include <string>

#include "storage.hpp"

namespace bench {

// Events per second inserting `events` outbox-shaped rows into a fresh database at `path`,
// `batch` rows per transaction.
double enqueue_floor(const std::string& path, const Storage& storage, int batch, long long events);

// Events per second delivering `events` pending events at `path` (prepared untimed), `batch`
// per transaction: per event read it, insert one domain row, insert one inbox row and delete
// its delivery row.
double delivery_floor(const std::string& path, const Storage& storage, int batch, long long events);

}  // namespace bench
