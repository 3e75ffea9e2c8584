#include "pause_text.hpp"

#include "format.hpp"
#include "printable.hpp"

namespace sluice::cli {

std::string describe_pause(const ConsumerStats& stats) {
  if (!stats.paused) return "running";
  std::string text = "paused since " + format_time(stats.paused_since) + " until " +
                     (stats.paused_until ? format_time(*stats.paused_until) : "resumed") + " by " +
                     stats.paused_by;
  if (!stats.pause_note.empty()) text += ": " + printable(stats.pause_note);
  return text;
}

}  // namespace sluice::cli
