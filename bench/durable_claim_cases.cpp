#include "durable_claim_cases.hpp"

#include <SQLiteCpp/Transaction.h>
#include <sqlite3.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "side_by_side.hpp"
#include "sluice/database.hpp"
#include "sluice/outbox.hpp"
#include "sluice/worker.hpp"
#include "stopwatch.hpp"

namespace bench {
namespace {

// Whatever the synchronous level, the WAL is synced after an outside-transaction consumer's claim
// commits, so that no effect leaves the box for a commit a power cut takes back; a backlog's later
// claims, which that sync already covered, go out without one (durable_claims.hpp). On kNormal
// those are the only WAL syncs of a drain but a checkpoint's (and a restarted WAL's header). Its
// cost is measured against the same drain with the claims' syncs left out: a pass-through VFS,
// made the default for the case, skips while `skip` is set every WAL sync its thread makes
// holding neither the WAL's write lock nor its checkpoint lock, which only the claims' are (the
// sides take turns, never run at once).
constexpr double kDurableClaimTarget = 0.9;
constexpr const char* kTopic = "bench.mail";

struct SyncSwitch {
  // First member: the sqlite3_vfs* SQLite hands back is also a SyncSwitch*.
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  bool skip = false;
  long long claim_syncs = 0;  // made (not skipped)
  long long skipped = 0;
};

// The WAL's shared-memory lock slots this thread holds exclusively: bit 0 the write lock, bit 1
// the checkpoint lock (SQLite's WAL_WRITE_LOCK and WAL_CKPT_LOCK). SQLite syncs the WAL itself
// only under one of them.
thread_local unsigned held_wal_locks = 0;

SyncSwitch& sync_switch() {
  static SyncSwitch instance;
  return instance;
}

struct SwitchFile {
  sqlite3_file base;
  bool wal;
  sqlite3_file* real;
};

sqlite3_file* real_of(sqlite3_file* f) { return reinterpret_cast<SwitchFile*>(f)->real; }

int file_close(sqlite3_file* f) { return real_of(f)->pMethods->xClose(real_of(f)); }
int file_read(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
  return real_of(f)->pMethods->xRead(real_of(f), buf, amt, off);
}
int file_write(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
  return real_of(f)->pMethods->xWrite(real_of(f), buf, amt, off);
}
int file_truncate(sqlite3_file* f, sqlite3_int64 size) {
  return real_of(f)->pMethods->xTruncate(real_of(f), size);
}
int file_sync(sqlite3_file* f, int flags) {
  if (reinterpret_cast<SwitchFile*>(f)->wal) {
    if (held_wal_locks == 0) {
      if (sync_switch().skip) {
        ++sync_switch().skipped;
        return SQLITE_OK;
      }
      ++sync_switch().claim_syncs;
    }
  }
  return real_of(f)->pMethods->xSync(real_of(f), flags);
}
int file_size(sqlite3_file* f, sqlite3_int64* size) {
  return real_of(f)->pMethods->xFileSize(real_of(f), size);
}
int file_lock(sqlite3_file* f, int level) { return real_of(f)->pMethods->xLock(real_of(f), level); }
int file_unlock(sqlite3_file* f, int level) {
  return real_of(f)->pMethods->xUnlock(real_of(f), level);
}
int file_check_reserved(sqlite3_file* f, int* out) {
  return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}
int file_control(sqlite3_file* f, int op, void* arg) {
  return real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}
int file_sector_size(sqlite3_file* f) { return real_of(f)->pMethods->xSectorSize(real_of(f)); }
int file_device_characteristics(sqlite3_file* f) {
  return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}
int file_shm_map(sqlite3_file* f, int page, int page_size, int extend, void volatile** out) {
  return real_of(f)->pMethods->xShmMap(real_of(f), page, page_size, extend, out);
}
int file_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  const int rc = real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
  if ((flags & SQLITE_SHM_EXCLUSIVE) != 0 && (rc == SQLITE_OK || (flags & SQLITE_SHM_UNLOCK))) {
    for (int slot = offset; slot < offset + n && slot < 2; ++slot) {
      if ((flags & SQLITE_SHM_LOCK) != 0) {
        held_wal_locks |= 1u << slot;
      } else {
        held_wal_locks &= ~(1u << slot);
      }
    }
  }
  return rc;
}
void file_shm_barrier(sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }
int file_shm_unmap(sqlite3_file* f, int delete_flag) {
  return real_of(f)->pMethods->xShmUnmap(real_of(f), delete_flag);
}
int file_fetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** out) {
  return real_of(f)->pMethods->xFetch(real_of(f), off, amt, out);
}
int file_unfetch(sqlite3_file* f, sqlite3_int64 off, void* page) {
  return real_of(f)->pMethods->xUnfetch(real_of(f), off, page);
}

const sqlite3_io_methods kFileMethods = {
    3,
    file_close,
    file_read,
    file_write,
    file_truncate,
    file_sync,
    file_size,
    file_lock,
    file_unlock,
    file_check_reserved,
    file_control,
    file_sector_size,
    file_device_characteristics,
    file_shm_map,
    file_shm_lock,
    file_shm_barrier,
    file_shm_unmap,
    file_fetch,
    file_unfetch,
};

int vfs_open(sqlite3_vfs* v, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* file = reinterpret_cast<SwitchFile*>(f);
  file->base.pMethods = nullptr;
  file->wal = (flags & SQLITE_OPEN_WAL) != 0;
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  sqlite3_vfs* real = reinterpret_cast<SyncSwitch*>(v)->real;
  const int rc = real->xOpen(real, name, file->real, flags, out_flags);
  if (file->real->pMethods != nullptr) file->base.pMethods = &kFileMethods;
  return rc;
}

// Makes the switch the default VFS while it lives.
class SwitchInstalled {
 public:
  SwitchInstalled() {
    SyncSwitch& s = sync_switch();
    if (s.real == nullptr) {
      s.real = sqlite3_vfs_find(nullptr);
      s.vfs = *s.real;  // every call but open goes straight to the real VFS
      s.vfs.szOsFile = static_cast<int>(sizeof(SwitchFile)) + s.real->szOsFile;
      s.vfs.zName = "bench-sync-switch";
      s.vfs.xOpen = vfs_open;
      s.vfs.pNext = nullptr;
    }
    sqlite3_vfs_register(&s.vfs, 1);
  }
  ~SwitchInstalled() {
    sqlite3_vfs_unregister(&sync_switch().vfs);
    sqlite3_vfs_register(sync_switch().real, 1);
  }
};

// A backlog drained by one outside-transaction consumer whose handler does nothing (the effect
// itself is not what is measured), with the claims' WAL syncs made or skipped.
class OutsideDrain final : public Side {
 public:
  OutsideDrain(const std::string& path, int batch, bool skip_syncs)
      : options_(options_for(batch)),
        producer_(sluice::open_database(path, options_)),
        outbox_(producer_, options_),
        worker_(path, options_),
        skip_syncs_(skip_syncs) {
    sluice::ConsumerOptions outside;
    outside.mode = sluice::DeliveryMode::kOutsideTransaction;
    worker_.subscribe(
        "mailer", kTopic, [this](const sluice::Event&, sluice::Context&) { ++handled_; }, outside);
  }

  void prepare(long long events) override {
    for (long long done = 0; done < events;) {
      SQLite::Transaction tx(producer_);
      for (int i = 0; i < 1000 && done < events; ++i, ++done) {
        sluice::NewEvent e;
        e.topic = kTopic;
        e.payload = R"({"to":"someone@example.com"})";
        outbox_.enqueue(e);
      }
      tx.commit();
    }
  }

  double run(long long events) override {
    const long long before = handled_;
    sync_switch().skip = skip_syncs_;
    Stopwatch stopwatch;
    worker_.run_until_idle();
    const double seconds = stopwatch.unstolen_seconds();
    sync_switch().skip = false;
    if (handled_ - before != events) {
      throw std::runtime_error("bench: outside drain handled " + std::to_string(handled_ - before) +
                               " of " + std::to_string(events));
    }
    return seconds;
  }

 private:
  static sluice::Options options_for(int batch) {
    sluice::Options options;
    options.synchronous = sluice::Synchronous::kNormal;
    options.batch_size = batch;
    return options;
  }

  sluice::Options options_;
  SQLite::Database producer_;
  sluice::Outbox outbox_;
  sluice::Worker worker_;
  bool skip_syncs_;
  long long handled_ = 0;
};

}  // namespace

void run_durable_claim_cases(Run& run) {
  for (auto [batch, events] :
       {std::pair{64, run.size(20'000, 500)}, std::pair{512, run.size(100'000, 2'000)}}) {
    const std::string name =
        "sluice outside drain durable claims batch " + std::to_string(batch) + " file NORMAL";
    if (!run.wants(name)) continue;
    run.guarded(name, [&] {
      const SwitchInstalled installed;
      const Storage storage = file_storage(sluice::Synchronous::kNormal);
      const std::string without_path = run.scratch().fresh_database("no-claim-sync", storage);
      const std::string with_path = run.scratch().fresh_database("claim-sync", storage);
      Compared pair;
      long long syncs = 0;
      {
        OutsideDrain without(without_path, batch, true);
        OutsideDrain with(with_path, batch, false);
        sync_switch().claim_syncs = 0;
        pair = side_by_side(without, with, events, run.rounds() == 1 ? 1 : 20);
        syncs = sync_switch().claim_syncs;
      }
      ScratchDir::remove_database(without_path);
      ScratchDir::remove_database(with_path);
      Result result;
      result.name = name;
      result.events = events;
      result.events_per_s = pair.sluice;
      result.floor_events_per_s = pair.floor;
      result.ratio = pair.ratio;
      result.figures = {{"claim_syncs_per_1000_events", 1000.0 * syncs / events}};
      char note[160];
      std::snprintf(note, sizeof note,
                    "vs. the same drain with its claims' WAL syncs skipped; median of %d turns' "
                    "ratios (%.2f-%.2f)",
                    pair.slices, pair.lowest, pair.highest);
      result.note = note;
      char target[32];
      std::snprintf(target, sizeof target, "ratio >= %.2f", kDurableClaimTarget);
      result.target = target;
      result.met = pair.ratio >= kDurableClaimTarget;
      run.add(result);
    });
  }
}

}  // namespace bench
