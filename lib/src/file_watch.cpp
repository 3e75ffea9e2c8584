#include "file_watch.hpp"

#include <algorithm>
#include <filesystem>

#ifdef __linux__
#include <linux/magic.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <ctime>
#endif

namespace sluice {

#ifdef __linux__
namespace {

// Filesystems whose writes by another machine (or through another mount) raise no inotify event.
bool remote_filesystem(const std::string& directory) {
  struct statfs info {};
  if (statfs(directory.c_str(), &info) != 0) return true;
  constexpr long kCifs = 0xFF534D42;
  constexpr long kSmb2 = 0xFE534D42;
  constexpr long kFuse = 0x65735546;
  constexpr long kNinePee = 0x01021997;
  constexpr long kCeph = 0x00C36400;
  const long type = static_cast<long>(info.f_type);
  return type == NFS_SUPER_MAGIC || type == SMB_SUPER_MAGIC || type == kCifs || type == kSmb2 ||
         type == kFuse || type == kNinePee || type == kCeph;
}

// What changes a database or its WAL: a write or truncation, a file appearing or going away
// under the name. The directory's own removal or move ends the watch.
constexpr std::uint32_t kEvents = IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
// While muted: only the end of the watch.
constexpr std::uint32_t kMutedEvents = IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

}  // namespace

FileWatch::FileWatch(const std::string& database_path) {
  const std::filesystem::path path = std::filesystem::absolute(database_path);
  file_name_ = path.filename().string();
  wal_name_ = file_name_ + "-wal";
  directory_ = path.parent_path().string();
  if (file_name_.empty() || remote_filesystem(directory_)) return;
  inotify_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  interrupt_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (inotify_ < 0 || interrupt_ < 0) return;
  watch_ = inotify_add_watch(inotify_, directory_.c_str(), kEvents);
}

void FileWatch::watch_for(std::uint32_t events) {
  // On the same directory the kernel changes the watch's mask in place and returns its
  // descriptor; another one (the directory was replaced under its name) is not the watched one,
  // whose removal or move is reported on the old descriptor: the caller polls from then on.
  const int watch = inotify_add_watch(inotify_, directory_.c_str(), events);
  if (watch == watch_) return;
  if (watch >= 0) inotify_rm_watch(inotify_, watch);
  watch_ = -1;
}

void FileWatch::mute() {
  if (muted_ || !available()) return;
  watch_for(kMutedEvents);
  muted_ = true;
}

bool FileWatch::listen() {
  if (!available()) return false;
  if (!muted_) return false;
  watch_for(kEvents);
  muted_ = false;
  return true;
}

FileWatch::~FileWatch() {
  if (inotify_ >= 0) close(inotify_);
  if (interrupt_ >= 0) close(interrupt_);
}

bool FileWatch::read_events() {
  alignas(inotify_event) char buffer[16 * (sizeof(inotify_event) + NAME_MAX + 1)];
  bool changed = false;
  for (;;) {
    const ssize_t length = read(inotify_, buffer, sizeof buffer);
    if (length <= 0) return changed;  // EAGAIN: nothing more queued
    for (ssize_t at = 0; at < length;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if ((event->mask & IN_Q_OVERFLOW) != 0) {
        changed = true;  // events were lost: any of them may have been a commit
      } else if ((event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) != 0) {
        watch_ = -1;  // the directory is gone or moved: the caller polls from now on
        changed = true;
      } else if (event->len > 0 && (wal_name_ == event->name || file_name_ == event->name)) {
        changed = true;
      }
    }
  }
}

bool FileWatch::wait(std::chrono::steady_clock::duration timeout, int also_readable) {
  if (!available()) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // In nanoseconds (ppoll): a worker waiting for a commit to be published pauses for tens of
    // microseconds.
    const long long left =
        std::max<long long>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   deadline - std::chrono::steady_clock::now())
                                   .count());
    const timespec wait_for{static_cast<time_t>(left / 1'000'000'000),
                            static_cast<long>(left % 1'000'000'000)};
    // Polled before anything is read: an idle worker's wait that times out costs this one call.
    // ppoll() skips a negative descriptor.
    pollfd fds[3] = {{inotify_, POLLIN, 0}, {interrupt_, POLLIN, 0}, {also_readable, POLLIN, 0}};
    const int ready = ppoll(fds, also_readable < 0 ? 2 : 3, &wait_for, nullptr);
    if (ready < 0) return false;  // a signal (the CLI's Ctrl-C) ends the wait too
    // A signal that came just before poll() leaves its byte in the self-pipe.
    if (also_readable >= 0 && (fds[2].revents & POLLIN) != 0) return false;
    if ((fds[0].revents & POLLIN) != 0) {
      if (read_events()) return true;
      if (!available()) return false;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      (void)read(interrupt_, &count, sizeof count);
      return false;
    }
    if (ready == 0 || left == 0) return false;  // timed out
  }
}

void FileWatch::interrupt() {
  if (interrupt_ < 0) return;
  const std::uint64_t one = 1;
  (void)write(interrupt_, &one, sizeof one);
}

#else

FileWatch::FileWatch(const std::string&) {}
FileWatch::~FileWatch() = default;
bool FileWatch::read_events() { return false; }
bool FileWatch::wait(std::chrono::steady_clock::duration, int) { return false; }
void FileWatch::interrupt() {}
void FileWatch::mute() {}
bool FileWatch::listen() { return false; }

#endif

}  // namespace sluice
