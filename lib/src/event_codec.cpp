#include "event_codec.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "json_syntax.hpp"
#include "sluice/error.hpp"

namespace sluice {
namespace {

constexpr std::size_t kMaxIdBytes = 256;
constexpr std::size_t kMaxKeyBytes = 1024;

void check_text(const std::string& value, std::size_t max_bytes, const char* field) {
  if (value.size() > max_bytes) {
    throw InvalidArgument(std::string("sluice: enqueue: ") + field + " is " +
                          std::to_string(value.size()) + " bytes; the limit is " +
                          std::to_string(max_bytes));
  }
  for (unsigned char c : value) {
    if (c < 0x20) {
      throw InvalidArgument(std::string("sluice: enqueue: ") + field +
                            " contains a control character");
    }
  }
}

// Printable ASCII other than the two characters JSON escapes: written as is.
bool is_plain(const std::string& text) {
  for (unsigned char c : text)
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  return true;
}

}  // namespace

Event read_event(SQLite::Statement& row, int first) {
  Event event;
  event.seq = row.getColumn(first).getInt64();
  event.id = row.getColumn(first + 1).getString();
  event.topic = row.getColumn(first + 2).getString();
  event.payload = row.getColumn(first + 3).getString();
  if (!row.getColumn(first + 4).isNull()) {
    const auto headers =
        nlohmann::json::parse(row.getColumn(first + 4).getString(), nullptr, false);
    if (headers.is_object()) {
      for (const auto& [name, value] : headers.items()) {
        event.headers[name] = value.is_string() ? value.template get<std::string>() : value.dump();
      }
    }
  }
  event.key = row.getColumn(first + 5).getString();
  event.dedup_key = row.getColumn(first + 6).getString();
  if (!row.getColumn(first + 7).isNull()) {
    event.not_before = TimePoint(Duration(row.getColumn(first + 7).getInt64()));
  }
  event.created_at = TimePoint(Duration(row.getColumn(first + 8).getInt64()));
  return event;
}

void validate_new_event(const NewEvent& event, std::size_t max_payload_bytes) {
  if (event.topic.empty()) throw InvalidArgument("sluice: enqueue: the topic is empty");
  check_text(event.topic, kMaxKeyBytes, "the topic");
  check_text(event.id, kMaxIdBytes, "the event ID");
  check_text(event.key, kMaxKeyBytes, "the ordering key");
  check_text(event.dedup_key, kMaxKeyBytes, "the dedup key");
  if (event.payload.size() > max_payload_bytes) {
    throw InvalidArgument("sluice: enqueue: the payload of a '" + event.topic + "' event is " +
                          std::to_string(event.payload.size()) + " bytes; the limit is " +
                          std::to_string(max_payload_bytes));
  }
  if (!is_valid_json(event.payload)) {
    // Only on the error path: nlohmann words what is wrong and where.
    try {
      const auto ignored = nlohmann::json::parse(event.payload);
    } catch (const nlohmann::json::exception& e) {
      throw InvalidArgument("sluice: enqueue: the payload of a '" + event.topic +
                            "' event is not valid JSON: " + e.what());
    }
    throw InvalidArgument("sluice: enqueue: the payload of a '" + event.topic +
                          "' event is not valid JSON (invalid UTF-8, or nested deeper than " +
                          std::to_string(kMaxJsonDepth) + " levels)");
  }
  for (const auto& [name, value] : event.headers) {
    if (name.empty()) throw InvalidArgument("sluice: enqueue: a header name is empty");
    check_text(name, kMaxKeyBytes, "a header name");
  }
}

std::string encode_headers(const Headers& headers) {
  if (headers.empty()) return {};
  // Headers are almost always plain ASCII (trace IDs, content types); building them by hand is
  // several times cheaper than through nlohmann, which stays the way for anything else.
  if (std::all_of(headers.begin(), headers.end(),
                  [](const auto& h) { return is_plain(h.first) && is_plain(h.second); })) {
    std::string text = "{";
    for (const auto& [name, value] : headers) {
      if (text.size() > 1) text += ',';
      text += '"';
      text += name;
      text += "\":\"";
      text += value;
      text += '"';
    }
    text += '}';
    return text;
  }
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [name, value] : headers) object[name] = value;
  return object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sluice
