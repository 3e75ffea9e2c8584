#include "event_views.hpp"

#include <nlohmann/json.hpp>

#include "format.hpp"
#include "printable.hpp"

namespace sluice::cli {

std::string compact_payload(const Event& event, std::size_t max_width) {
  const auto parsed = nlohmann::json::parse(event.payload, nullptr, false);
  std::string text = printable(parsed.is_discarded() ? event.payload : parsed.dump());
  if (display_width(text) > max_width) {
    // Cut on a code point boundary.
    std::size_t cut = max_width - 1;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "…";
  }
  return text;
}

std::string pretty_payload(const Event& event) {
  const auto parsed = nlohmann::json::parse(event.payload, nullptr, false);
  const std::string text = parsed.is_discarded() ? event.payload : parsed.dump(2);
  // Line by line: the line breaks are the indentation's, the rest printable.
  std::string out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    out +=
        (start == 0 ? "  " : "\n  ") + printable(std::string_view(text).substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Table event_table() {
  Table table({"SEQ", "ID", "TOPIC", "VERSION", "KEY", "CREATED", "PAYLOAD"});
  table.align_right(0);
  table.align_right(3);
  return table;
}

void add_event_row(Table& table, const Event& event) {
  table.add_row({std::to_string(event.seq), printable(event.id), printable(event.topic),
                 std::to_string(event.version), printable(event.key), format_time(event.created_at),
                 compact_payload(event, 60)});
}

}  // namespace sluice::cli
