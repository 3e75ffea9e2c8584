#include "fault_vfs.hpp"

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace sluice::torture {

struct FaultVfs::State {
  // First member, so the sqlite3_vfs* SQLite hands back is also a State*.
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  std::string name;
  std::atomic<bool> armed{false};
  std::atomic<long long> fail_at{0};
  std::atomic<bool> persistent{false};
  std::atomic<int> error{SQLITE_IOERR};
  std::atomic<unsigned> kinds{0};
  std::atomic<long long> calls{0};
  std::atomic<long long> faults{0};

  // SQLITE_OK to let the call through, else the code to return instead.
  int check(IoCall call, int ioerr_code) {
    if (!armed.load() || (kinds.load() & call) == 0) return SQLITE_OK;
    const long long n = ++calls;
    const long long at = fail_at.load();
    if (n == at || (persistent.load() && n > at)) {
      ++faults;
      return error.load() == SQLITE_FULL ? SQLITE_FULL : ioerr_code;
    }
    return SQLITE_OK;
  }
};

namespace {

using State = FaultVfs::State;

struct FaultFile {
  sqlite3_file base;
  State* state;
  sqlite3_file* real;
};

sqlite3_file* real_of(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f)->real; }
State* state_of(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f)->state; }
State* state_of(sqlite3_vfs* v) { return reinterpret_cast<State*>(v); }

int file_close(sqlite3_file* f) {
  sqlite3_file* real = real_of(f);
  return real->pMethods ? real->pMethods->xClose(real) : SQLITE_OK;
}
int file_read(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
  if (int rc = state_of(f)->check(kRead, SQLITE_IOERR_READ)) return rc;
  return real_of(f)->pMethods->xRead(real_of(f), buf, amt, off);
}
int file_write(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
  if (int rc = state_of(f)->check(kWrite, SQLITE_IOERR_WRITE)) return rc;
  return real_of(f)->pMethods->xWrite(real_of(f), buf, amt, off);
}
int file_truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = state_of(f)->check(kTruncate, SQLITE_IOERR_TRUNCATE)) return rc;
  return real_of(f)->pMethods->xTruncate(real_of(f), size);
}
int file_sync(sqlite3_file* f, int flags) {
  if (int rc = state_of(f)->check(kSync, SQLITE_IOERR_FSYNC)) return rc;
  return real_of(f)->pMethods->xSync(real_of(f), flags);
}
int file_size(sqlite3_file* f, sqlite3_int64* size) {
  if (int rc = state_of(f)->check(kFileSize, SQLITE_IOERR_FSTAT)) return rc;
  return real_of(f)->pMethods->xFileSize(real_of(f), size);
}
int file_lock(sqlite3_file* f, int level) {
  if (int rc = state_of(f)->check(kLock, SQLITE_IOERR_LOCK)) return rc;
  return real_of(f)->pMethods->xLock(real_of(f), level);
}
// Unlocking never fails: SQLite treats a failed unlock as unrecoverable for the connection.
int file_unlock(sqlite3_file* f, int level) {
  return real_of(f)->pMethods->xUnlock(real_of(f), level);
}
int file_check_reserved(sqlite3_file* f, int* out) {
  if (int rc = state_of(f)->check(kLock, SQLITE_IOERR_CHECKRESERVEDLOCK)) return rc;
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
  if (int rc = state_of(f)->check(kShm, SQLITE_IOERR_SHMMAP)) return rc;
  return real_of(f)->pMethods->xShmMap(real_of(f), page, page_size, extend, out);
}
int file_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  // Releasing a shm lock never fails, for the same reason as xUnlock.
  if ((flags & SQLITE_SHM_LOCK) != 0) {
    if (int rc = state_of(f)->check(kShm, SQLITE_IOERR_SHMLOCK)) return rc;
  }
  return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}
void file_shm_barrier(sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }
int file_shm_unmap(sqlite3_file* f, int delete_flag) {
  return real_of(f)->pMethods->xShmUnmap(real_of(f), delete_flag);
}
// No memory-mapped reads: every read must pass through xRead to be counted.
int file_fetch(sqlite3_file*, sqlite3_int64, int, void** out) {
  *out = nullptr;
  return SQLITE_OK;
}
int file_unfetch(sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; }

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
  State* state = state_of(v);
  auto* file = reinterpret_cast<FaultFile*>(f);
  file->base.pMethods = nullptr;
  file->state = state;
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  file->real->pMethods = nullptr;
  if (int rc = state->check(kOpen, SQLITE_CANTOPEN)) return rc;
  int rc = state->real->xOpen(state->real, name, file->real, flags, out_flags);
  if (file->real->pMethods != nullptr) file->base.pMethods = &kFileMethods;
  return rc;
}
int vfs_delete(sqlite3_vfs* v, const char* name, int sync_dir) {
  if (int rc = state_of(v)->check(kDelete, SQLITE_IOERR_DELETE)) return rc;
  return state_of(v)->real->xDelete(state_of(v)->real, name, sync_dir);
}
int vfs_access(sqlite3_vfs* v, const char* name, int flags, int* out) {
  if (int rc = state_of(v)->check(kAccess, SQLITE_IOERR_ACCESS)) return rc;
  return state_of(v)->real->xAccess(state_of(v)->real, name, flags, out);
}
int vfs_full_pathname(sqlite3_vfs* v, const char* name, int n, char* out) {
  return state_of(v)->real->xFullPathname(state_of(v)->real, name, n, out);
}
void* vfs_dl_open(sqlite3_vfs* v, const char* name) {
  return state_of(v)->real->xDlOpen(state_of(v)->real, name);
}
void vfs_dl_error(sqlite3_vfs* v, int n, char* out) {
  state_of(v)->real->xDlError(state_of(v)->real, n, out);
}
void (*vfs_dl_sym(sqlite3_vfs* v, void* handle, const char* symbol))(void) {
  return state_of(v)->real->xDlSym(state_of(v)->real, handle, symbol);
}
void vfs_dl_close(sqlite3_vfs* v, void* handle) {
  state_of(v)->real->xDlClose(state_of(v)->real, handle);
}
int vfs_randomness(sqlite3_vfs* v, int n, char* out) {
  return state_of(v)->real->xRandomness(state_of(v)->real, n, out);
}
int vfs_sleep(sqlite3_vfs* v, int micros) {
  return state_of(v)->real->xSleep(state_of(v)->real, micros);
}
int vfs_current_time(sqlite3_vfs* v, double* out) {
  return state_of(v)->real->xCurrentTime(state_of(v)->real, out);
}
int vfs_get_last_error(sqlite3_vfs* v, int n, char* out) {
  return state_of(v)->real->xGetLastError(state_of(v)->real, n, out);
}
int vfs_current_time_int64(sqlite3_vfs* v, sqlite3_int64* out) {
  return state_of(v)->real->xCurrentTimeInt64(state_of(v)->real, out);
}

}  // namespace

FaultVfs::FaultVfs(std::string name, bool make_default) : state_(std::make_unique<State>()) {
  sqlite3_initialize();
  state_->real = sqlite3_vfs_find(nullptr);
  if (state_->real == nullptr) throw std::runtime_error("FaultVfs: no default SQLite VFS");
  state_->name = std::move(name);
  sqlite3_vfs& v = state_->vfs;
  v.iVersion = 2;
  v.szOsFile = static_cast<int>(sizeof(FaultFile)) + state_->real->szOsFile;
  v.mxPathname = state_->real->mxPathname;
  v.zName = state_->name.c_str();
  v.xOpen = vfs_open;
  v.xDelete = vfs_delete;
  v.xAccess = vfs_access;
  v.xFullPathname = vfs_full_pathname;
  v.xDlOpen = vfs_dl_open;
  v.xDlError = vfs_dl_error;
  v.xDlSym = vfs_dl_sym;
  v.xDlClose = vfs_dl_close;
  v.xRandomness = vfs_randomness;
  v.xSleep = vfs_sleep;
  v.xCurrentTime = vfs_current_time;
  v.xGetLastError = vfs_get_last_error;
  v.xCurrentTimeInt64 = vfs_current_time_int64;
  if (int rc = sqlite3_vfs_register(&v, make_default ? 1 : 0); rc != SQLITE_OK) {
    throw std::runtime_error("FaultVfs: registering VFS '" + state_->name +
                             "' failed: " + sqlite3_errstr(rc));
  }
}

FaultVfs::~FaultVfs() { sqlite3_vfs_unregister(&state_->vfs); }

const std::string& FaultVfs::name() const { return state_->name; }

void FaultVfs::arm(const FaultPlan& plan) {
  state_->armed = false;
  state_->calls = 0;
  state_->faults = 0;
  state_->fail_at = plan.fail_at;
  state_->persistent = plan.persistent;
  state_->error = plan.error;
  state_->kinds = plan.calls;
  state_->armed = true;
}

void FaultVfs::disarm() { state_->armed = false; }

long long FaultVfs::calls() const { return state_->calls.load(); }

long long FaultVfs::faults() const { return state_->faults.load(); }

}  // namespace sluice::torture
