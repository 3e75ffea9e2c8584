#include "interrupt.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <system_error>

namespace sluice::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
// A self-pipe: the handler writes a byte so that wait_for() wakes at once.
int g_pipe[2] = {-1, -1};
struct sigaction g_previous_int;
struct sigaction g_previous_term;

void on_signal(int) {
  g_interrupted = 1;
  const char byte = 1;
  [[maybe_unused]] const ssize_t written = write(g_pipe[1], &byte, 1);
}

}  // namespace

InterruptWatch::InterruptWatch() {
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::system_error(errno, std::generic_category(), "cannot watch for interrupts");
  }
  g_interrupted = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptWatch::~InterruptWatch() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
  close(g_pipe[0]);
  close(g_pipe[1]);
  g_pipe[0] = g_pipe[1] = -1;
}

bool InterruptWatch::wait_for(std::chrono::milliseconds timeout) {
  if (g_interrupted) return true;
  pollfd fd{g_pipe[0], POLLIN, 0};
  poll(&fd, 1, static_cast<int>(timeout.count()));
  return g_interrupted != 0;
}

bool InterruptWatch::interrupted() const { return g_interrupted != 0; }

int InterruptWatch::readable_when_interrupted() const { return g_pipe[0]; }

}  // namespace sluice::cli
