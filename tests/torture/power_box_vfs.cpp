#include "power_box_vfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <vector>

namespace sluice::torture {

namespace {

constexpr long long kBlock = 4096;
constexpr const char* kUndoSuffix = ".undo";

// One record of an undo log: the file's path, its size at the last sync, or the pre-image of a
// range written (or truncated away) since.
enum RecordType : char { kPath = 'P', kSyncedSize = 'S', kPreImage = 'W' };

struct Record {
  char type;
  long long offset;  // kSyncedSize: the size
  std::string data;  // kPath: the path; kPreImage: the bytes
};

bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// One write(2) per record, so a record is never interleaved with another process's.
void append_record(int fd, char type, long long offset, const std::string& data) {
  std::string bytes(1, type);
  const long long size = static_cast<long long>(data.size());
  bytes.append(reinterpret_cast<const char*>(&offset), sizeof offset);
  bytes.append(reinterpret_cast<const char*>(&size), sizeof size);
  bytes += data;
  if (!write_all(fd, bytes.data(), bytes.size())) {
    throw std::runtime_error("PowerBoxVfs: appending to an undo log failed");
  }
}

std::vector<Record> read_records(const std::string& undo_path) {
  std::vector<Record> records;
  const int fd = ::open(undo_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return records;
  std::string all;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  std::size_t at = 0;
  constexpr std::size_t kHeader = 1 + 2 * sizeof(long long);
  while (at + kHeader <= all.size()) {
    Record r;
    r.type = all[at];
    long long size = 0;
    std::memcpy(&r.offset, all.data() + at + 1, sizeof r.offset);
    std::memcpy(&size, all.data() + at + 1 + sizeof r.offset, sizeof size);
    if (size < 0 || at + kHeader + static_cast<std::size_t>(size) > all.size()) break;
    r.data = all.substr(at + kHeader, static_cast<std::size_t>(size));
    at += kHeader + static_cast<std::size_t>(size);
    records.push_back(std::move(r));
  }
  return records;
}

std::vector<std::string> undo_logs(const std::string& box_dir) {
  std::vector<std::string> logs;
  DIR* dir = ::opendir(box_dir.c_str());
  if (dir == nullptr) return logs;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() > std::strlen(kUndoSuffix) &&
        name.compare(name.size() - std::strlen(kUndoSuffix), std::string::npos, kUndoSuffix) == 0) {
      logs.push_back(box_dir + "/" + name);
    }
  }
  ::closedir(dir);
  return logs;
}

// Puts the file an undo log describes back as the cut leaves it. Writes with a descriptor of its
// own, which it never closes: the process dies right after, holding its locks until then.
void restore(const std::string& undo_path, BoxTear tear, std::mt19937_64& rng) {
  const std::vector<Record> records = read_records(undo_path);
  std::string path;
  long long synced_size = -1;
  for (const Record& r : records) {
    if (r.type == kPath) path = r.data;
    if (r.type == kSyncedSize) synced_size = r.offset;
  }
  if (path.empty() || synced_size < 0) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  const long long current_size = ::lseek(fd, 0, SEEK_END);
  // Reordered: each block touched since the sync keeps its unsynced content with even odds.
  std::map<long long, bool> keep_current;
  auto restored = [&](long long block) {
    if (tear == BoxTear::kClean) return true;
    auto [it, fresh] = keep_current.emplace(block, false);
    if (fresh) it->second = rng() % 2 == 0;
    return !it->second;
  };
  // Newest first, so that the oldest pre-image of a byte (its synced content) is written last.
  for (auto r = records.rbegin(); r != records.rend(); ++r) {
    if (r->type != kPreImage) continue;
    const long long end = r->offset + static_cast<long long>(r->data.size());
    for (long long from = r->offset; from < end;) {
      const long long to = std::min(end, (from / kBlock + 1) * kBlock);
      if (restored(from / kBlock)) {
        (void)!::pwrite(fd, r->data.data() + (from - r->offset), static_cast<size_t>(to - from),
                        from);
      }
      from = to;
    }
  }
  const bool keep_size = tear == BoxTear::kReordered && rng() % 2 == 0;
  (void)!::ftruncate(fd, keep_size ? current_size : synced_size);
}

}  // namespace

struct PowerBoxVfs::State {
  // First member, so the sqlite3_vfs* SQLite hands back is also a State*.
  sqlite3_vfs vfs{};
  sqlite3_vfs* real = nullptr;
  std::string box_dir;
  // The box lock: the process's mutex (threads) and an flock (processes). Every recorded write,
  // truncate and sync holds it, so a cut never lands in the middle of one.
  std::mutex mutex;
  int lock_fd = -1;
  std::mt19937_64 rng;
  long long countdown = 0;
  BoxTear tear = BoxTear::kClean;
  long long io_calls = 0;

  struct Guard {
    explicit Guard(State& s) : state(s) {
      state.mutex.lock();
      while (::flock(state.lock_fd, LOCK_EX) != 0) {
      }
    }
    ~Guard() {
      ::flock(state.lock_fd, LOCK_UN);
      state.mutex.unlock();
    }
    State& state;
  };

  std::string undo_path(const std::string& path) const {
    std::string name = path;
    std::replace(name.begin(), name.end(), '/', '%');
    return box_dir + "/" + name + kUndoSuffix;
  }

  // Holds the box lock. `armed`: reached by the countdown, not cut_now().
  [[noreturn]] void cut_locked(BoxTear how, bool armed) {
    for (const std::string& log : undo_logs(box_dir)) restore(log, how, rng);
    const std::string marker = cut_marker(box_dir);
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      const std::string text = std::to_string(::getpid()) + " " + std::to_string(io_calls) + " " +
                               (how == BoxTear::kClean ? "clean" : "reordered") +
                               (armed ? " armed" : " now") + "\n";
      (void)!::write(fd, text.data(), text.size());
    }
    // Every other process of the box waits on the box lock or runs no I/O: they die with us.
    ::kill(0, SIGKILL);
    ::_exit(137);
  }

  // Counts a write, truncate or sync; cuts the power when the countdown reaches it.
  void tick_locked() {
    ++io_calls;
    if (countdown <= 0) return;
    if (--countdown == 0) cut_locked(tear, true);
  }
};

namespace {

using State = PowerBoxVfs::State;

struct BoxFile {
  sqlite3_file base;
  State* state;
  // -1 for a file that does not outlive a power cut (shared memory, temp files): passed through.
  int undo_fd;
  sqlite3_file* real;
};

BoxFile* file_of(sqlite3_file* f) { return reinterpret_cast<BoxFile*>(f); }
sqlite3_file* real_of(sqlite3_file* f) { return file_of(f)->real; }
State* state_of(sqlite3_vfs* v) { return reinterpret_cast<State*>(v); }

// Records what [offset, offset + length) holds now, as far as the file reaches, read through
// SQLite's own handle.
int record_pre_image(BoxFile* file, sqlite3_int64 offset, sqlite3_int64 length) {
  sqlite3_int64 size = 0;
  if (int rc = file->real->pMethods->xFileSize(file->real, &size); rc != SQLITE_OK) return rc;
  const sqlite3_int64 present = std::min(length, size - offset);
  if (present <= 0) return SQLITE_OK;
  std::string before(static_cast<std::size_t>(present), '\0');
  int rc =
      file->real->pMethods->xRead(file->real, before.data(), static_cast<int>(present), offset);
  if (rc != SQLITE_OK) return rc;
  append_record(file->undo_fd, kPreImage, offset, before);
  return SQLITE_OK;
}

// Starts the undo log afresh: everything the file holds now is synced.
int mark_synced(BoxFile* file, const std::string& path) {
  sqlite3_int64 size = 0;
  if (int rc = file->real->pMethods->xFileSize(file->real, &size); rc != SQLITE_OK) return rc;
  if (::ftruncate(file->undo_fd, 0) != 0) return SQLITE_IOERR_TRUNCATE;
  append_record(file->undo_fd, kPath, 0, path);
  append_record(file->undo_fd, kSyncedSize, size, {});
  return SQLITE_OK;
}

// The path an undo log names, read back from the log itself.
std::string logged_path(int undo_fd) {
  char header[1 + 2 * sizeof(long long)];
  if (::pread(undo_fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header)) return {};
  long long size = 0;
  std::memcpy(&size, header + 1 + sizeof(long long), sizeof size);
  std::string path(static_cast<std::size_t>(size), '\0');
  if (::pread(undo_fd, path.data(), path.size(), sizeof header) !=
      static_cast<ssize_t>(path.size())) {
    return {};
  }
  return path;
}

int file_close(sqlite3_file* f) {
  BoxFile* file = file_of(f);
  int rc = file->real->pMethods ? file->real->pMethods->xClose(file->real) : SQLITE_OK;
  if (file->undo_fd >= 0) ::close(file->undo_fd);
  return rc;
}

int file_read(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
  return real_of(f)->pMethods->xRead(real_of(f), buf, amt, off);
}

int file_write(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
  BoxFile* file = file_of(f);
  if (file->undo_fd < 0) return file->real->pMethods->xWrite(file->real, buf, amt, off);
  State::Guard lock(*file->state);
  file->state->tick_locked();
  if (int rc = record_pre_image(file, off, amt); rc != SQLITE_OK) return rc;
  return file->real->pMethods->xWrite(file->real, buf, amt, off);
}

int file_truncate(sqlite3_file* f, sqlite3_int64 size) {
  BoxFile* file = file_of(f);
  if (file->undo_fd < 0) return file->real->pMethods->xTruncate(file->real, size);
  State::Guard lock(*file->state);
  file->state->tick_locked();
  sqlite3_int64 current = 0;
  if (int rc = file->real->pMethods->xFileSize(file->real, &current); rc != SQLITE_OK) return rc;
  if (current > size) {
    if (int rc = record_pre_image(file, size, current - size); rc != SQLITE_OK) return rc;
  }
  return file->real->pMethods->xTruncate(file->real, size);
}

int file_sync(sqlite3_file* f, int flags) {
  BoxFile* file = file_of(f);
  if (file->undo_fd < 0) return file->real->pMethods->xSync(file->real, flags);
  (void)flags;
  State::Guard lock(*file->state);
  file->state->tick_locked();
  // The real fsync is left out: the box's disk is the undo log, and the machine's disk never
  // loses power in the test. It would only make each cut slower.
  return mark_synced(file, logged_path(file->undo_fd));
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
  return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}
void file_shm_barrier(sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }
int file_shm_unmap(sqlite3_file* f, int delete_flag) {
  return real_of(f)->pMethods->xShmUnmap(real_of(f), delete_flag);
}
// No memory-mapped reads: every read goes through the methods above.
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
  auto* file = reinterpret_cast<BoxFile*>(f);
  file->base.pMethods = nullptr;
  file->state = state;
  file->undo_fd = -1;
  file->real = reinterpret_cast<sqlite3_file*>(file + 1);
  file->real->pMethods = nullptr;
  int rc = state->real->xOpen(state->real, name, file->real, flags, out_flags);
  if (file->real->pMethods == nullptr) return rc;
  const bool durable =
      (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL)) != 0;
  if (name != nullptr && durable) {
    State::Guard lock(*state);
    file->undo_fd =
        ::open(state->undo_path(name).c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (file->undo_fd < 0) {
      file->real->pMethods->xClose(file->real);
      return SQLITE_CANTOPEN;
    }
    // The first process of the box to open the file finds it as the disk holds it: synced.
    if (::lseek(file->undo_fd, 0, SEEK_END) == 0) {
      if (int marked = mark_synced(file, name); marked != SQLITE_OK) {
        file->real->pMethods->xClose(file->real);
        ::close(file->undo_fd);
        return marked;
      }
    }
  }
  file->base.pMethods = &kFileMethods;
  return rc;
}

// An unlink is taken as durable at once: SQLite deletes a WAL only once its content is
// checkpointed and the database synced.
int vfs_delete(sqlite3_vfs* v, const char* name, int sync_dir) {
  State* state = state_of(v);
  State::Guard lock(*state);
  ::unlink(state->undo_path(name).c_str());
  return state->real->xDelete(state->real, name, sync_dir);
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

PowerBoxVfs::PowerBoxVfs(const std::string& box_dir, std::uint64_t seed)
    : state_(std::make_unique<State>()) {
  sqlite3_initialize();
  state_->real = sqlite3_vfs_find(nullptr);
  if (state_->real == nullptr) throw std::runtime_error("PowerBoxVfs: no default SQLite VFS");
  state_->box_dir = box_dir;
  state_->rng.seed(seed);
  state_->lock_fd = ::open((box_dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (state_->lock_fd < 0) {
    throw std::runtime_error("PowerBoxVfs: cannot open the box lock in " + box_dir);
  }
  sqlite3_vfs& v = state_->vfs;
  v.iVersion = 2;
  v.szOsFile = static_cast<int>(sizeof(BoxFile)) + state_->real->szOsFile;
  v.mxPathname = state_->real->mxPathname;
  v.zName = "power-box";
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
  if (int rc = sqlite3_vfs_register(&v, 1); rc != SQLITE_OK) {
    throw std::runtime_error(std::string("PowerBoxVfs: registering the VFS failed: ") +
                             sqlite3_errstr(rc));
  }
}

PowerBoxVfs::~PowerBoxVfs() {
  sqlite3_vfs_unregister(&state_->vfs);
  ::close(state_->lock_fd);
}

void PowerBoxVfs::cut_at_io(long long n, BoxTear tear) {
  State::Guard lock(*state_);
  state_->tear = tear;
  state_->countdown = n;
}

void PowerBoxVfs::cut_now(BoxTear tear) {
  state_->mutex.lock();
  while (::flock(state_->lock_fd, LOCK_EX) != 0) {
  }
  state_->cut_locked(tear, false);
}

long long PowerBoxVfs::io_calls() const {
  State::Guard lock(*state_);
  return state_->io_calls;
}

std::string PowerBoxVfs::cut_marker(const std::string& box_dir) { return box_dir + "/cut"; }

void PowerBoxVfs::reset(const std::string& box_dir) {
  for (const std::string& log : undo_logs(box_dir)) ::unlink(log.c_str());
  ::unlink(cut_marker(box_dir).c_str());
}

void PowerBoxVfs::parse_cut(const std::string& spec, long long& n, BoxTear& tear) {
  const auto colon = spec.find(':');
  const std::string how = colon == std::string::npos ? "clean" : spec.substr(colon + 1);
  try {
    n = std::stoll(spec.substr(0, colon));
  } catch (const std::exception&) {
    n = 0;
  }
  if (n <= 0 || (how != "clean" && how != "reordered")) {
    throw std::invalid_argument("power cut '" + spec +
                                "': expected N:clean or N:reordered with N >= 1");
  }
  tear = how == "clean" ? BoxTear::kClean : BoxTear::kReordered;
}

}  // namespace sluice::torture
