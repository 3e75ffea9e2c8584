// A progress bar for long operations on a terminal, e.g. `prune`.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace sluice::cli {

// Not thread-safe. Redraws one line in place with '\r'. Draws nothing until the work has run
// longer than `show_after`, so quick runs stay quiet; draws nothing at all when disabled (output
// not a terminal).
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, std::string label, long long total, bool enabled,
              std::chrono::milliseconds show_after = std::chrono::milliseconds(500));
  // Clears the line if anything was drawn.
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(long long done);

  // The line for `done` of `total` with a bar `width` characters wide, e.g.
  // "prune [#####...............]  25% 250/1000".
  static std::string render(const std::string& label, long long done, long long total, int width);

 private:
  std::ostream& out_;
  std::string label_;
  long long total_;
  bool enabled_;
  std::chrono::steady_clock::time_point show_at_;
  bool drawn_ = false;
};

}  // namespace sluice::cli
