#include "message_headers.hpp"

#include <strings.h>

#include <cstdlib>

#include "sluice/error.hpp"

namespace sluice::nats {
namespace {

bool has_reserved_prefix(const std::string& name) {
  return strncasecmp(name.c_str(), "Nats-", 5) == 0 || strncasecmp(name.c_str(), "Sluice-", 7) == 0;
}

std::string header_value(natsMsg* message, const char* name) {
  const char* value = nullptr;
  if (natsMsgHeader_Get(message, name, &value) != NATS_OK || value == nullptr) return {};
  return value;
}

}  // namespace

Headers message_headers(const Event& event) {
  Headers headers = event.headers;
  headers[kTopicHeader] = event.topic;
  if (!event.key.empty()) headers[kKeyHeader] = event.key;
  if (!event.dedup_key.empty()) headers[kDedupKeyHeader] = event.dedup_key;
  if (event.not_before)
    headers[kNotBeforeHeader] = std::to_string(event.not_before->time_since_epoch().count());
  return headers;
}

std::string header_problem(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    if (name.empty()) return "empty header name";
    for (char c : name)
      if (c == ':' || static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
        return "header name '" + name + "' holds ':', whitespace or a control character";
    if (value.find_first_of("\r\n") != std::string::npos)
      return "header '" + name + "' has a line break in its value";
  }
  return {};
}

std::string reserved_header_problem(const Headers& headers) {
  for (const auto& [name, value] : headers)
    if (has_reserved_prefix(name)) return "header name '" + name + "' uses a reserved prefix";
  return {};
}

NewEvent event_from_message(natsMsg* message) {
  NewEvent event;
  event.id = header_value(message, "Nats-Msg-Id");
  event.topic = header_value(message, kTopicHeader);
  if (event.id.empty() || event.topic.empty())
    throw InvalidArgument(std::string("ingest message on '") + natsMsg_GetSubject(message) +
                          "': no Nats-Msg-Id or Sluice-Topic header, not a relayed sluice event");
  event.payload.assign(natsMsg_GetData(message), natsMsg_GetDataLength(message));
  event.key = header_value(message, kKeyHeader);
  event.dedup_key = header_value(message, kDedupKeyHeader);
  std::string not_before = header_value(message, kNotBeforeHeader);
  if (!not_before.empty()) event.not_before = TimePoint(Duration(std::atoll(not_before.c_str())));

  const char** names = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(message, &names, &count) == NATS_OK) {
    for (int i = 0; i < count; ++i)
      if (!has_reserved_prefix(names[i])) event.headers[names[i]] = header_value(message, names[i]);
    std::free(names);
  }
  return event;
}

}  // namespace sluice::nats
