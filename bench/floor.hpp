// The floor: plain SQL through the sqlite3 C API doing the row work sluice must do anyway, with
// sluice's pragmas and statements prepared once. Sluice's figures are ratios against it.
#pragma once

#include <memory>
#include <string>

#include "side.hpp"
#include "storage.hpp"

namespace bench {

// Inserts outbox-shaped rows into a fresh database at `path`, `batch` rows per transaction.
std::unique_ptr<Side> enqueue_floor(const std::string& path, const Storage& storage, int batch);

// Delivers pending events at `path` (prepare() inserts them), `batch` per transaction: per event
// read it, insert one domain row, insert one inbox row and delete its delivery row.
std::unique_ptr<Side> delivery_floor(const std::string& path, const Storage& storage, int batch);

}  // namespace bench
