#include "liveness_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace sluice {
namespace {

struct flock one_byte(short type, std::int64_t offset) {
  struct flock range {};
  range.l_type = type;
  range.l_whence = SEEK_SET;
  range.l_start = static_cast<off_t>(offset);
  range.l_len = 1;
  return range;
}

}  // namespace

std::string liveness_lock_path(const std::string& database_path) {
  return database_path + "-sluice-lock";
}

std::optional<LivenessLock> LivenessLock::take(const std::string& database_path,
                                               std::int64_t worker_id) {
  if (worker_id <= 0) return std::nullopt;
  const int fd =
      open(liveness_lock_path(database_path).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::nullopt;
  struct flock range = one_byte(F_WRLCK, worker_id);
  if (fcntl(fd, F_OFD_SETLK, &range) != 0) {
    close(fd);
    return std::nullopt;
  }
  return LivenessLock(fd);
}

LivenessLock::~LivenessLock() {
  if (fd_ >= 0) close(fd_);
}

LivenessLock::LivenessLock(LivenessLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

LivenessLock& LivenessLock::operator=(LivenessLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

LivenessProbe::LivenessProbe(std::string database_path)
    : lock_path_(liveness_lock_path(database_path)) {}

LivenessProbe::~LivenessProbe() {
  if (fd_ >= 0) close(fd_);
}

std::optional<bool> LivenessProbe::held(std::int64_t worker_id) {
  if (worker_id <= 0) return false;
  // A lock file deleted and made anew is another file: locks in the new one are not seen through
  // the old one's descriptor.
  struct stat now_there {};
  struct stat opened {};
  if (fd_ >= 0 && (stat(lock_path_.c_str(), &now_there) != 0 || fstat(fd_, &opened) != 0 ||
                   now_there.st_ino != opened.st_ino || now_there.st_dev != opened.st_dev)) {
    close(fd_);
    fd_ = -1;
  }
  if (fd_ < 0) {
    fd_ = open(lock_path_.c_str(), O_RDONLY | O_CLOEXEC);
    // No file: nobody ever locked in it since it was made, or it was deleted. Opened again at the
    // next question, as a worker may create it meanwhile.
    if (fd_ < 0) return errno == ENOENT ? std::optional<bool>(false) : std::nullopt;
  }
  struct flock range = one_byte(F_WRLCK, worker_id);
  if (fcntl(fd_, F_OFD_GETLK, &range) != 0) return std::nullopt;
  return range.l_type != F_UNLCK;
}

}  // namespace sluice
