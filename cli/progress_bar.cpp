#include "progress_bar.hpp"

#include <algorithm>

namespace sluice::cli {

ProgressBar::ProgressBar(std::ostream& out, std::string label, long long total, bool enabled,
                         std::chrono::milliseconds show_after)
    : out_(out),
      label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      show_at_(std::chrono::steady_clock::now() + show_after) {}

ProgressBar::~ProgressBar() {
  if (drawn_)
    out_ << '\r' << std::string(render(label_, total_, total_, 30).size(), ' ') << '\r'
         << std::flush;
}

void ProgressBar::update(long long done) {
  if (!enabled_ || std::chrono::steady_clock::now() < show_at_) return;
  out_ << '\r' << render(label_, done, total_, 30) << std::flush;
  drawn_ = true;
}

std::string ProgressBar::render(const std::string& label, long long done, long long total,
                                int width) {
  const long long clamped = std::clamp(done, 0LL, std::max(total, 0LL));
  const long long percent = total > 0 ? clamped * 100 / total : 100;
  const int filled = static_cast<int>(total > 0 ? clamped * width / total : width);
  std::string line =
      label + " [" + std::string(filled, '#') + std::string(width - filled, '.') + "] ";
  const std::string percent_text = std::to_string(percent) + "%";
  line += std::string(4 - std::min<std::size_t>(4, percent_text.size()), ' ') + percent_text;
  line += " " + std::to_string(done) + "/" + std::to_string(total);
  return line;
}

}  // namespace sluice::cli
