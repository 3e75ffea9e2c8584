#include "event_codec.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "control_characters.hpp"
#include "json_syntax.hpp"
#include "sluice/error.hpp"
#include "trace_context.hpp"
#include "utf8.hpp"

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
  // DEL and the C1 controls too: each reached an operator's terminal as a control.
  if (has_control_character(value)) {
    throw InvalidArgument(std::string("sluice: enqueue: ") + field +
                          " contains a control character");
  }
}

// `bytes` for an error message: printable ASCII as is, every other byte as \xHH, so bytes that
// are not UTF-8 show as what they are.
std::string escaped(const std::string& bytes) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string text;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      text += static_cast<char>(c);
    } else {
      text += {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
    }
  }
  return text;
}

// Headers are stored as a JSON object, whose strings hold UTF-8 only: a name or value that is
// not UTF-8 is refused rather than stored with its bad bytes replaced (which also merged two
// names differing only in them).
void check_header(const std::string& name, const std::string& value) {
  if (name.empty()) throw InvalidArgument("sluice: enqueue: a header name is empty");
  check_text(name, kMaxKeyBytes, "a header name");
  if (!is_valid_utf8(name)) {
    throw InvalidArgument("sluice: enqueue: header name '" + escaped(name) +
                          "' is not valid UTF-8");
  }
  if (!is_valid_utf8(value)) {
    throw InvalidArgument("sluice: enqueue: header '" + name +
                          "' has a value that is not valid UTF-8");
  }
}

// Printable ASCII other than the two characters JSON escapes: written as is.
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c <= 0x7e; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

// One table look-up a character: four comparisons each cost twice as much for a trace header.
bool is_plain(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](unsigned char c) { return kPlain[c]; });
}

// The headers encode_headers wrote by hand: {"name":"value",...} of plain strings. Empty when
// `text` has any other shape.
std::optional<Headers> decode_plain_headers(std::string_view text) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}' ||
      text.find('\\') != std::string_view::npos) {
    return std::nullopt;
  }
  Headers headers;
  std::size_t at = 1;
  auto quoted = [&](std::string_view& out) {
    if (at >= text.size() || text[at] != '"') return false;
    const std::size_t end = text.find('"', at + 1);
    if (end == std::string_view::npos) return false;
    out = text.substr(at + 1, end - at - 1);
    at = end + 1;
    return true;
  };
  while (at < text.size() - 1) {
    std::string_view name, value;
    if (!quoted(name) || at >= text.size() || text[at++] != ':' || !quoted(value)) {
      return std::nullopt;
    }
    headers.emplace_hint(headers.end(), name, value);
    if (text[at] == ',' && at + 1 < text.size() - 1) {
      ++at;
    } else if (at != text.size() - 1) {
      return std::nullopt;
    }
  }
  return headers;
}

Headers decode_headers(const std::string& text) {
  if (auto plain = decode_plain_headers(text)) return std::move(*plain);
  Headers headers;
  const auto object = nlohmann::json::parse(text, nullptr, false);
  if (object.is_object()) {
    for (const auto& [name, value] : object.items()) {
      headers[name] = value.is_string() ? value.template get<std::string>() : value.dump();
    }
  }
  return headers;
}

}  // namespace

Event read_event(SQLite::Statement& row, int first) {
  Event event;
  event.seq = row.getColumn(first).getInt64();
  event.id = row.getColumn(first + 1).getString();
  event.topic = row.getColumn(first + 2).getString();
  event.payload = row.getColumn(first + 3).getString();
  if (!row.getColumn(first + 4).isNull()) event.headers = decode_headers(row.getColumn(first + 4));
  event.key = row.getColumn(first + 5).getString();
  event.dedup_key = row.getColumn(first + 6).getString();
  if (!row.getColumn(first + 7).isNull()) {
    event.not_before = TimePoint(Duration(row.getColumn(first + 7).getInt64()));
  }
  event.created_at = TimePoint(Duration(row.getColumn(first + 8).getInt64()));
  event.version = row.getColumn(first + 9).getInt();
  return event;
}

void validate_new_event(const NewEvent& event, std::size_t max_payload_bytes) {
  if (event.topic.empty()) throw InvalidArgument("sluice: enqueue: the topic is empty");
  check_text(event.topic, kMaxKeyBytes, "the topic");
  if (event.version < 1) {
    throw InvalidArgument("sluice: enqueue: the version of a '" + event.topic + "' event is " +
                          std::to_string(event.version) + "; a version is 1 or more");
  }
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
  for (const auto& [name, value] : event.headers) check_header(name, value);
  validate_trace_context(event);
}

std::string encode_headers(const Headers& headers) {
  if (headers.empty()) return {};
  // Headers are almost always plain ASCII (trace IDs, content types); building them by hand is
  // several times cheaper than through nlohmann, which stays the way for anything else.
  if (std::all_of(headers.begin(), headers.end(),
                  [](const auto& h) { return is_plain(h.first) && is_plain(h.second); })) {
    // Sized once: growing it a character at a time reallocated it three or four times.
    std::size_t size = 2;
    for (const auto& [name, value] : headers) size += name.size() + value.size() + 6;
    std::string text;
    text.reserve(size);
    text += '{';
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
  // validate_new_event let only UTF-8 through: nothing here is replaced.
  return object.dump();
}

}  // namespace sluice
