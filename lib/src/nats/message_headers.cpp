#include "message_headers.hpp"

#include <strings.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

#include "sluice/error.hpp"

namespace sluice::nats {
namespace {

bool has_reserved_prefix(const char* name) {
  return strncasecmp(name, "Nats-", 5) == 0 || strncasecmp(name, "Sluice-", 7) == 0;
}

// White space other than line breaks (refused on their own): what libnats trims from a value.
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

// The time header `name` of the message of `event`: milliseconds since the epoch. atoll read
// "tomorrow" as 0, the epoch: a header that does not parse makes the message malformed, like a
// missing ID.
TimePoint header_time(const NewEvent& event, const char* name, std::string_view text) {
  Duration::rep millis = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), millis);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw InvalidArgument(std::string("ingest message '") + event.id + "': " + name + " '" +
                          std::string(text) + "' is not a time in milliseconds since the epoch");
  }
  return TimePoint(Duration(millis));
}

// The version a Sluice-Version header holds; enqueue refuses one under 1 as any entry point's.
int header_version(const NewEvent& event, std::string_view text) {
  int version = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), version);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw InvalidArgument(std::string("ingest message '") + event.id + "': " + kVersionHeader +
                          " '" + std::string(text) + "' is not a version number");
  }
  return version;
}

bool begins(std::string_view text, std::string_view start) {
  return text.size() >= start.size() && text.compare(0, start.size(), start) == 0;
}

// Why two of `names` cannot travel together, or empty if they can. libnats 3.4 looks a header up
// comparing only as many bytes as the name looked for has, so where one name begins another (and
// their hashes meet, as those of "X-Fo" and "X-Foobar" do) setting one replaces the other and
// getting one reads the other. Case matters: libnats compares bytes.
template <typename Names>
std::string prefix_problem(const Names& names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string_view shorter = names[i];
    for (std::size_t j = 0; j < names.size(); ++j) {
      const std::string_view longer = names[j];
      if (longer.size() > shorter.size() && begins(longer, shorter)) {
        return "header names '" + std::string(shorter) + "' and '" + std::string(longer) +
               "': one begins the other, which libnats cannot tell apart";
      }
    }
  }
  return {};
}

}  // namespace

void message_headers(const Event& event, std::vector<HeaderView>& headers,
                     std::deque<std::string>& texts) {
  headers.clear();
  headers.reserve(event.headers.size() + 6);
  for (const auto& [name, value] : event.headers) headers.emplace_back(name, value);
  headers.emplace_back(kTopicHeader, event.topic);
  if (!event.key.empty()) headers.emplace_back(kKeyHeader, event.key);
  if (!event.dedup_key.empty()) headers.emplace_back(kDedupKeyHeader, event.dedup_key);
  if (event.not_before) {
    texts.push_back(std::to_string(event.not_before->time_since_epoch().count()));
    headers.emplace_back(kNotBeforeHeader, texts.back());
  }
  texts.push_back(std::to_string(event.created_at.time_since_epoch().count()));
  headers.emplace_back(kCreatedAtHeader, texts.back());
  if (event.version != 1) {
    texts.push_back(std::to_string(event.version));
    headers.emplace_back(kVersionHeader, texts.back());
  }
}

std::string header_problem(const std::vector<HeaderView>& headers) {
  for (const auto& [name, value] : headers) {
    if (name.empty()) return "empty header name";
    if (std::any_of(name.begin(), name.end(), [](char c) {
          return c == ':' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f;
        }))
      return "header name '" + std::string(name) + "' holds ':', whitespace or a control character";
    // memchr, not find_first_of, which looks each character up in the set one call at a time.
    if (std::memchr(value.data(), '\n', value.size()) != nullptr ||
        std::memchr(value.data(), '\r', value.size()) != nullptr)
      return "header '" + std::string(name) + "' has a line break in its value";
    // libnats trims white space around a value it reads: the ingesting side would get less.
    if (!value.empty() && (is_blank(value.front()) || is_blank(value.back())))
      return "header '" + std::string(name) + "' has white space at the start or end of its value";
    // libnats takes a value as a C string: it would end at the NUL.
    if (std::memchr(value.data(), '\0', value.size()) != nullptr)
      return "header '" + std::string(name) + "' has a NUL byte in its value";
  }
  // With Nats-Msg-Id, which the publisher sets beside them.
  std::vector<std::string_view> names{kMsgIdHeader};
  names.reserve(headers.size() + 1);
  for (const auto& header : headers) names.push_back(header.first);
  return prefix_problem(names);
}

std::string reserved_header_problem(const Headers& headers) {
  for (const auto& [name, value] : headers)
    if (has_reserved_prefix(name.c_str()))
      return "header name '" + name + "' uses a reserved prefix";
  return {};
}

void event_from_message(natsMsg* message, NewEvent& event) {
  event.id.clear();
  event.topic.clear();
  event.key.clear();
  event.dedup_key.clear();
  event.not_before.reset();
  event.created_at.reset();
  event.version = 1;
  const char* not_before = nullptr;
  const char* created_at = nullptr;
  const char* version = nullptr;
  // The event's own headers are assigned into the nodes `event` has already, which a stream of
  // events with the same header names all reuse; the names not seen again are erased at the end.
  std::size_t own_headers = 0;
  // One pass over the names the message has: looking each known header up by name paid for the
  // absent ones too, and looked the event's own headers up twice.
  const char** names = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(message, &names, &count) != NATS_OK) count = 0;
  const std::unique_ptr<const char*, decltype(&std::free)> names_memory(names, &std::free);
  // Looked up by name below, which libnats cannot do exactly for these (prefix_problem).
  if (std::string problem = prefix_problem(std::span<const char* const>(names, count));
      !problem.empty()) {
    throw InvalidArgument(std::string("ingest message on '") + natsMsg_GetSubject(message) +
                          "': " + problem);
  }
  for (int i = 0; i < count; ++i) {
    const char* name = names[i];
    // A name on two lines is no relayed sluice event (its headers are a map); and a line whose
    // name another begins was merged into that one's values by libnats.
    const char** values = nullptr;
    int value_count = 0;
    if (natsMsgHeader_Values(message, name, &values, &value_count) != NATS_OK) value_count = 0;
    const char* value = value_count > 0 && values[0] != nullptr ? values[0] : "";
    std::free(values);
    if (value_count > 1) {
      throw InvalidArgument(std::string("ingest message on '") + natsMsg_GetSubject(message) +
                            "': header '" + name + "' has " + std::to_string(value_count) +
                            " values: it appears more than once, or libnats merged into it a "
                            "header whose name begins it");
    }
    if (std::strcmp(name, kMsgIdHeader) == 0) {
      event.id.assign(value);
    } else if (std::strcmp(name, kTopicHeader) == 0) {
      event.topic.assign(value);
    } else if (std::strcmp(name, kKeyHeader) == 0) {
      event.key.assign(value);
    } else if (std::strcmp(name, kDedupKeyHeader) == 0) {
      event.dedup_key.assign(value);
    } else if (std::strcmp(name, kNotBeforeHeader) == 0) {
      not_before = value;
    } else if (std::strcmp(name, kCreatedAtHeader) == 0) {
      created_at = value;
    } else if (std::strcmp(name, kVersionHeader) == 0) {
      version = value;
    } else if (!has_reserved_prefix(name)) {
      ++own_headers;
      auto [header, added] = event.headers.try_emplace(name, value);
      if (!added) header->second.assign(value);
    }
  }
  // Names of the event before that this message lacks; found among its names by comparing them
  // whole, as libnats's look-up by name does not.
  if (event.headers.size() > own_headers) {
    std::erase_if(event.headers, [&](const auto& header) {
      return std::none_of(names, names + count, [&](const char* name) {
        return std::strcmp(name, header.first.c_str()) == 0;
      });
    });
  }
  if (event.id.empty() || event.topic.empty())
    throw InvalidArgument(std::string("ingest message on '") + natsMsg_GetSubject(message) +
                          "': no Nats-Msg-Id or Sluice-Topic header, not a relayed sluice event");
  event.payload.assign(natsMsg_GetData(message), natsMsg_GetDataLength(message));
  if (not_before != nullptr && *not_before != '\0') {
    event.not_before = header_time(event, kNotBeforeHeader, not_before);
  }
  // A message of a relay older than the Sluice-Created-At header is created when ingested.
  if (created_at != nullptr && *created_at != '\0') {
    event.created_at = header_time(event, kCreatedAtHeader, created_at);
  }
  if (version != nullptr) event.version = header_version(event, version);
}
}  // namespace sluice::nats
