#include "deadline_stream.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sluice::cli {
namespace {

void ip_and_port(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

}  // namespace

DeadlineStream::DeadlineStream(int fd, std::string& pending, Clock::time_point read_deadline,
                               std::chrono::milliseconds write_timeout)
    : fd_(fd), pending_(pending), read_deadline_(read_deadline), write_timeout_(write_timeout) {}

DeadlineStream::~DeadlineStream() { pending_.erase(0, consumed_); }

bool DeadlineStream::wait(short events, Clock::time_point deadline) const {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, events, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000 * 60)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

bool DeadlineStream::is_readable() const {
  return consumed_ < pending_.size() || wait(POLLIN, read_deadline_);
}

bool DeadlineStream::is_writable() const { return wait(POLLOUT, Clock::now() + write_timeout_); }

ssize_t DeadlineStream::read(char* ptr, size_t size) {
  if (consumed_ < pending_.size()) {
    // httplib reads a header a byte at a time: hand out what is buffered without copying it
    // around.
    const std::size_t n = std::min(size, pending_.size() - consumed_);
    std::memcpy(ptr, pending_.data() + consumed_, n);
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }
  for (;;) {
    if (!wait(POLLIN, read_deadline_)) return -1;
    const ssize_t n = recv(fd_, ptr, size, MSG_DONTWAIT);
    if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
  }
}

ssize_t DeadlineStream::write(const char* ptr, size_t size) {
  for (;;) {
    if (!wait(POLLOUT, Clock::now() + write_timeout_)) return -1;
    const ssize_t n = send(fd_, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
  }
}

void DeadlineStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    ip_and_port(address, ip, port);
  }
}

void DeadlineStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    ip_and_port(address, ip, port);
  }
}

}  // namespace sluice::cli
