// How an event travels as a NATS message: its ID as Nats-Msg-Id, its payload as the body, its
// topic, key, dedup key and version in Sluice-* headers and its own headers as NATS headers of the
// same name.
#pragma once

#include <nats/nats.h>

#include <deque>
#include <string>
#include <vector>

#include "jetstream_client.hpp"
#include "sluice/event.hpp"

namespace sluice::nats {

// Set by the publisher (JetStreamClient) from OutgoingMessage::msg_id.
inline constexpr const char* kMsgIdHeader = "Nats-Msg-Id";
inline constexpr const char* kTopicHeader = "Sluice-Topic";
inline constexpr const char* kKeyHeader = "Sluice-Key";
inline constexpr const char* kDedupKeyHeader = "Sluice-Dedup-Key";
inline constexpr const char* kNotBeforeHeader = "Sluice-Not-Before";
inline constexpr const char* kCreatedAtHeader = "Sluice-Created-At";
// Sent for a version other than 1: a message without it (as an older relay sends) is version 1.
inline constexpr const char* kVersionHeader = "Sluice-Version";

// Makes `headers` the NATS headers carrying `event` (Nats-Msg-Id is set by the publisher), as
// views of its strings; a vector kept from one message to the next keeps its capacity. A value
// with no string of its own (the not-before time) is appended to `texts`. The event and `texts`
// must outlive the views.
void message_headers(const Event& event, std::vector<HeaderView>& headers,
                     std::deque<std::string>& texts);

// Why these headers cannot be sent as NATS headers byte for byte, or empty if they can: names
// may not hold ':' or whitespace, nor begin another name or Nats-Msg-Id (libnats would confuse
// the two), values may not hold line breaks or NUL bytes, nor start or end with white space (the
// receiving side would get them trimmed).
std::string header_problem(const std::vector<HeaderView>& headers);

// Why an event's own headers cannot be relayed, or empty if they can: the Nats- and Sluice-
// prefixes belong to the broker and to sluice. The client checks the rest (header_problem) as it
// does for any message.
std::string reserved_header_problem(const Headers& headers);

// Makes `event` the event a relayed message carries, reusing the memory of what `event` held
// (a fetch's events are read into the last fetch's). Throws InvalidArgument if it lacks
// Nats-Msg-Id or Sluice-Topic, repeats a header name, or has two names where one begins the
// other (which libnats cannot look up apart).
void event_from_message(natsMsg* message, NewEvent& event);

}  // namespace sluice::nats
