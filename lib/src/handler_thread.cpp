#include "handler_thread.hpp"

#include <utility>

namespace sluice {

HandlerThread::~HandlerThread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void HandlerThread::run(std::function<void()> job) {
  // Started on first use, before the job is set, so that a failure to start leaves no job
  // behind: most workers never run a batch handler ahead of a commit.
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  {
    std::lock_guard lock(mutex_);
    job_ = std::move(job);
    busy_ = true;
    error_ = nullptr;
  }
  changed_.notify_all();
}

std::exception_ptr HandlerThread::wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !busy_; });
  return std::exchange(error_, nullptr);
}

void HandlerThread::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return quit_ || (busy_ && job_); });
    if (quit_) return;
    std::function<void()> job = std::move(job_);
    job_ = nullptr;
    lock.unlock();
    std::exception_ptr error;
    try {
      job();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    error_ = error;
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace sluice
