#include "message_headers.hpp"

#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "sluice/error.hpp"

namespace sluice::nats {
namespace {

bool has_reserved_prefix(const char* name) {
  return strncasecmp(name, "Nats-", 5) == 0 || strncasecmp(name, "Sluice-", 7) == 0;
}

std::string header_value(natsMsg* message, const char* name) {
  const char* value = nullptr;
  if (natsMsgHeader_Get(message, name, &value) != NATS_OK || value == nullptr) return {};
  return value;
}

}  // namespace

std::vector<HeaderView> message_headers(const Event& event, std::deque<std::string>& texts) {
  std::vector<HeaderView> headers;
  headers.reserve(event.headers.size() + 4);
  for (const auto& [name, value] : event.headers) headers.emplace_back(name, value);
  headers.emplace_back(kTopicHeader, event.topic);
  if (!event.key.empty()) headers.emplace_back(kKeyHeader, event.key);
  if (!event.dedup_key.empty()) headers.emplace_back(kDedupKeyHeader, event.dedup_key);
  if (event.not_before) {
    texts.push_back(std::to_string(event.not_before->time_since_epoch().count()));
    headers.emplace_back(kNotBeforeHeader, texts.back());
  }
  return headers;
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
  }
  return {};
}

std::string reserved_header_problem(const Headers& headers) {
  for (const auto& [name, value] : headers)
    if (has_reserved_prefix(name.c_str()))
      return "header name '" + name + "' uses a reserved prefix";
  return {};
}

NewEvent event_from_message(natsMsg* message) {
  NewEvent event;
  std::string not_before;
  // One pass over the names the message has: looking each known header up by name paid for the
  // absent ones too, and looked the event's own headers up twice.
  const char** names = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(message, &names, &count) == NATS_OK) {
    for (int i = 0; i < count; ++i) {
      const char* name = names[i];
      std::string value = header_value(message, name);
      if (std::strcmp(name, "Nats-Msg-Id") == 0) {
        event.id = std::move(value);
      } else if (std::strcmp(name, kTopicHeader) == 0) {
        event.topic = std::move(value);
      } else if (std::strcmp(name, kKeyHeader) == 0) {
        event.key = std::move(value);
      } else if (std::strcmp(name, kDedupKeyHeader) == 0) {
        event.dedup_key = std::move(value);
      } else if (std::strcmp(name, kNotBeforeHeader) == 0) {
        not_before = std::move(value);
      } else if (!has_reserved_prefix(name)) {
        event.headers.emplace(name, std::move(value));
      }
    }
    std::free(names);
  }
  if (event.id.empty() || event.topic.empty())
    throw InvalidArgument(std::string("ingest message on '") + natsMsg_GetSubject(message) +
                          "': no Nats-Msg-Id or Sluice-Topic header, not a relayed sluice event");
  event.payload.assign(natsMsg_GetData(message), natsMsg_GetDataLength(message));
  if (!not_before.empty()) event.not_before = TimePoint(Duration(std::atoll(not_before.c_str())));
  return event;
}

}  // namespace sluice::nats
