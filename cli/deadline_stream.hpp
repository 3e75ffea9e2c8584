// The httplib::Stream HttpServer answers a request on: a connected socket whose reads end at a
// deadline, starting with the bytes the server already read while it waited for the header.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

namespace sluice::cli {

// Not thread-safe: one request on one worker thread.
class DeadlineStream : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  // Reads consume `pending` first, then the socket until `read_deadline`; each write waits at
  // most `write_timeout` for room. What the request leaves of `pending` stays in it.
  DeadlineStream(int fd, std::string& pending, Clock::time_point read_deadline,
                 std::chrono::milliseconds write_timeout);
  ~DeadlineStream() override;

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  // Waits for `events` on the socket until `deadline`; false when it passed first.
  bool wait(short events, Clock::time_point deadline) const;

  const int fd_;
  std::string& pending_;
  // pending_[0, consumed_) has been read; erased once, by the destructor.
  std::size_t consumed_ = 0;
  const Clock::time_point read_deadline_;
  const std::chrono::milliseconds write_timeout_;
};

}  // namespace sluice::cli
