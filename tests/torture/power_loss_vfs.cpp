#include "power_loss_vfs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <vector>

namespace sluice::torture {

namespace {

constexpr long long kSector = 512;

// One write or truncate made since the file's last sync.
struct CachedOp {
  bool truncate = false;
  sqlite3_int64 offset = 0;  // for a truncate: the new size
  std::string data;
};

// What the page cache holds for one path beyond what is on disk.
struct CachedFile {
  std::string path;
  std::vector<CachedOp> ops;
};

}  // namespace

struct PowerLossVfs::State {
  // First member, so the sqlite3_vfs* SQLite hands back is also a State*.
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  std::string name;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<CachedFile>> files;
  std::mt19937_64 rng;
  std::atomic<long long> countdown{0};
  Tear tear = Tear::kDropAll;

  // Lands what `tear` lets survive of every cached write, then ends the process. Holds `mutex`.
  [[noreturn]] void cut_locked(Tear how) {
    for (auto& [path, file] : files) {
      if (file->ops.empty()) continue;
      const int fd = ::open(path.c_str(), O_WRONLY);
      if (fd < 0) continue;
      for (const CachedOp& op : file->ops) {
        if (how == Tear::kDropAll || rng() % 2 == 0) continue;
        if (op.truncate) {
          (void)::ftruncate(fd, op.offset);
          continue;
        }
        std::size_t len = op.data.size();
        if (how == Tear::kTornSectors && rng() % 2 == 0) {
          const long long end = op.offset + static_cast<long long>(op.data.size());
          std::vector<long long> cuts;
          for (long long c = (op.offset / kSector + 1) * kSector; c < end; c += kSector) {
            cuts.push_back(c);
          }
          cuts.push_back(end);
          len = static_cast<std::size_t>(cuts[rng() % cuts.size()] - op.offset);
        }
        (void)::pwrite(fd, op.data.data(), len, op.offset);
      }
      ::close(fd);
    }
    ::_exit(kPowerCutExitCode);
  }

  // Counts a write or sync call; cuts the power when the countdown reaches it. Holds `mutex`.
  void tick_locked() {
    long long left = countdown.load();
    if (left <= 0) return;
    countdown = left - 1;
    if (left == 1) cut_locked(tear);
  }
};

namespace {

using State = PowerLossVfs::State;

struct PowerLossFile {
  sqlite3_file base;
  State* state;
  // Null for a nameless temp file, which is passed through: it never outlives a power cut.
  std::shared_ptr<CachedFile> cached;
  sqlite3_file* real;
};

PowerLossFile* file_of(sqlite3_file* f) { return reinterpret_cast<PowerLossFile*>(f); }
sqlite3_file* real_of(sqlite3_file* f) { return file_of(f)->real; }
State* state_of(sqlite3_vfs* v) { return reinterpret_cast<State*>(v); }

// The file's size with the cached operations applied over the disk size.
int logical_size(PowerLossFile* file, sqlite3_int64* size) {
  if (int rc = file->real->pMethods->xFileSize(file->real, size); rc != SQLITE_OK) return rc;
  for (const CachedOp& op : file->cached->ops) {
    if (op.truncate) {
      *size = op.offset;
    } else {
      *size = std::max<sqlite3_int64>(*size, op.offset + static_cast<long long>(op.data.size()));
    }
  }
  return SQLITE_OK;
}

int file_close(sqlite3_file* f) {
  PowerLossFile* file = file_of(f);
  int rc = file->real->pMethods ? file->real->pMethods->xClose(file->real) : SQLITE_OK;
  file->cached.~shared_ptr();
  return rc;
}

int file_read(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
  PowerLossFile* file = file_of(f);
  if (!file->cached) return file->real->pMethods->xRead(file->real, buf, amt, off);
  std::lock_guard lock(file->state->mutex);
  int rc = file->real->pMethods->xRead(file->real, buf, amt, off);
  if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) return rc;
  auto* out = static_cast<char*>(buf);
  const sqlite3_int64 end = off + amt;
  for (const CachedOp& op : file->cached->ops) {
    if (op.truncate) {
      if (op.offset < end) {
        const sqlite3_int64 from = std::max(op.offset, off);
        std::memset(out + (from - off), 0, static_cast<std::size_t>(end - from));
      }
      continue;
    }
    const sqlite3_int64 op_end = op.offset + static_cast<long long>(op.data.size());
    const sqlite3_int64 from = std::max(op.offset, off);
    const sqlite3_int64 to = std::min(op_end, end);
    if (from < to) {
      std::memcpy(out + (from - off), op.data.data() + (from - op.offset),
                  static_cast<std::size_t>(to - from));
    }
  }
  sqlite3_int64 size = 0;
  if (int size_rc = logical_size(file, &size); size_rc != SQLITE_OK) return size_rc;
  if (end <= size) return SQLITE_OK;
  const sqlite3_int64 valid = std::max<sqlite3_int64>(size - off, 0);
  std::memset(out + valid, 0, static_cast<std::size_t>(amt - valid));
  return SQLITE_IOERR_SHORT_READ;
}

int file_write(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
  PowerLossFile* file = file_of(f);
  if (!file->cached) return file->real->pMethods->xWrite(file->real, buf, amt, off);
  std::lock_guard lock(file->state->mutex);
  file->state->tick_locked();
  file->cached->ops.push_back({false, off, std::string(static_cast<const char*>(buf), amt)});
  return SQLITE_OK;
}

int file_truncate(sqlite3_file* f, sqlite3_int64 size) {
  PowerLossFile* file = file_of(f);
  if (!file->cached) return file->real->pMethods->xTruncate(file->real, size);
  std::lock_guard lock(file->state->mutex);
  file->cached->ops.push_back({true, size, {}});
  return SQLITE_OK;
}

int file_sync(sqlite3_file* f, int flags) {
  PowerLossFile* file = file_of(f);
  if (!file->cached) return file->real->pMethods->xSync(file->real, flags);
  std::lock_guard lock(file->state->mutex);
  file->state->tick_locked();
  for (const CachedOp& op : file->cached->ops) {
    int rc = op.truncate
                 ? file->real->pMethods->xTruncate(file->real, op.offset)
                 : file->real->pMethods->xWrite(file->real, op.data.data(),
                                                static_cast<int>(op.data.size()), op.offset);
    if (rc != SQLITE_OK) return rc;
  }
  file->cached->ops.clear();
  return file->real->pMethods->xSync(file->real, flags);
}

int file_size(sqlite3_file* f, sqlite3_int64* size) {
  PowerLossFile* file = file_of(f);
  if (!file->cached) return file->real->pMethods->xFileSize(file->real, size);
  std::lock_guard lock(file->state->mutex);
  return logical_size(file, size);
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
  return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}
void file_shm_barrier(sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }
int file_shm_unmap(sqlite3_file* f, int delete_flag) {
  return real_of(f)->pMethods->xShmUnmap(real_of(f), delete_flag);
}
// No memory-mapped reads: they would bypass the cache model.
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
  auto* file = reinterpret_cast<PowerLossFile*>(f);
  file->base.pMethods = nullptr;
  file->state = state;
  new (&file->cached) std::shared_ptr<CachedFile>();
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  file->real->pMethods = nullptr;
  int rc = state->real->xOpen(state->real, name, file->real, flags, out_flags);
  if (file->real->pMethods == nullptr) {
    file->cached.~shared_ptr();
    return rc;
  }
  if (name != nullptr) {
    std::lock_guard lock(state->mutex);
    auto& cached = state->files[name];
    if (!cached) cached = std::make_shared<CachedFile>(CachedFile{name, {}});
    file->cached = cached;
  }
  file->base.pMethods = &kFileMethods;
  return rc;
}
int vfs_delete(sqlite3_vfs* v, const char* name, int sync_dir) {
  {
    std::lock_guard lock(state_of(v)->mutex);
    state_of(v)->files.erase(name);
  }
  return state_of(v)->real->xDelete(state_of(v)->real, name, sync_dir);
}
int vfs_access(sqlite3_vfs* v, const char* name, int flags, int* out) {
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

PowerLossVfs::PowerLossVfs(std::string name, std::uint64_t seed, bool make_default)
    : state_(std::make_unique<State>()) {
  sqlite3_initialize();
  state_->real = sqlite3_vfs_find(nullptr);
  if (state_->real == nullptr) throw std::runtime_error("PowerLossVfs: no default SQLite VFS");
  state_->name = std::move(name);
  state_->rng.seed(seed);
  sqlite3_vfs& v = state_->vfs;
  v.iVersion = 2;
  v.szOsFile = static_cast<int>(sizeof(PowerLossFile)) + state_->real->szOsFile;
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
    throw std::runtime_error("PowerLossVfs: registering VFS '" + state_->name +
                             "' failed: " + sqlite3_errstr(rc));
  }
}

PowerLossVfs::~PowerLossVfs() { sqlite3_vfs_unregister(&state_->vfs); }

const std::string& PowerLossVfs::name() const { return state_->name; }

void PowerLossVfs::cut_at_io(long long n, Tear tear) {
  std::lock_guard lock(state_->mutex);
  state_->tear = tear;
  state_->countdown = n;
}

void PowerLossVfs::cut_now(Tear tear) {
  state_->mutex.lock();
  state_->cut_locked(tear);
}

void PowerLossVfs::flush_all() {
  std::lock_guard lock(state_->mutex);
  for (auto& [path, file] : state_->files) {
    if (file->ops.empty()) continue;
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) throw std::runtime_error("PowerLossVfs::flush_all: cannot open " + path);
    for (const CachedOp& op : file->ops) {
      const bool ok = op.truncate ? ::ftruncate(fd, op.offset) == 0
                                  : ::pwrite(fd, op.data.data(), op.data.size(), op.offset) ==
                                        static_cast<ssize_t>(op.data.size());
      if (!ok) {
        ::close(fd);
        throw std::runtime_error("PowerLossVfs::flush_all: writing " + path + " failed");
      }
    }
    ::fsync(fd);
    ::close(fd);
    file->ops.clear();
  }
}

long long PowerLossVfs::unsynced_bytes() const {
  std::lock_guard lock(state_->mutex);
  long long total = 0;
  for (const auto& [path, file] : state_->files) {
    for (const CachedOp& op : file->ops) total += static_cast<long long>(op.data.size());
  }
  return total;
}

}  // namespace sluice::torture
