// sluice_new_event and the status of sluice_enqueued, between C and C++.
#include "new_event.hpp"

#include <nlohmann/json.hpp>
#include <string>

#include "result_codes.hpp"
#include "sluice/error.hpp"

namespace sluice::c_api {
namespace {

std::string text_or_empty(const char* text) { return text != nullptr ? text : ""; }

// The headers of a sluice_new_event: a JSON object whose values are strings.
Headers parse_headers(const char* text) {
  Headers headers;
  if (text == nullptr || *text == '\0') return headers;
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument(std::string("sluice: enqueue: the headers are not valid JSON: ") +
                          e.what());
  }
  if (!object.is_object()) {
    throw InvalidArgument("sluice: enqueue: the headers must be a JSON object of string values");
  }
  for (const auto& [name, value] : object.items()) {
    if (!value.is_string()) {
      throw InvalidArgument("sluice: enqueue: header '" + name + "' is not a JSON string");
    }
    headers[name] = value.get<std::string>();
  }
  return headers;
}

}  // namespace

NewEvent to_new_event(const sluice_new_event& event) {
  require(event.topic, "sluice_enqueue: event->topic is NULL");
  NewEvent converted{.topic = event.topic,
                     .payload = event.payload != nullptr ? event.payload : "{}",
                     .headers = parse_headers(event.headers),
                     .key = text_or_empty(event.key),
                     .id = text_or_empty(event.id),
                     .dedup_key = text_or_empty(event.dedup_key)};
  if (event.not_before_ms != 0) converted.not_before = TimePoint(Duration(event.not_before_ms));
  return converted;
}

NewEvent to_new_event(const sluice_new_event_v2& event) {
  NewEvent converted = to_new_event(sluice_new_event{.topic = event.topic,
                                                     .payload = event.payload,
                                                     .key = event.key,
                                                     .id = event.id,
                                                     .dedup_key = event.dedup_key,
                                                     .headers = event.headers,
                                                     .not_before_ms = event.not_before_ms});
  // Zero-initialised, as the header asks, means the default version.
  converted.version = event.version == 0 ? 1 : event.version;
  return converted;
}

int status_code(EnqueueResult::Status status) {
  switch (status) {
    case EnqueueResult::Status::kDuplicateId:
      return SLUICE_DUPLICATE_ID;
    case EnqueueResult::Status::kDuplicateDedupKey:
      return SLUICE_DUPLICATE_DEDUP_KEY;
    case EnqueueResult::Status::kStored:
      break;
  }
  return SLUICE_STORED;
}

}  // namespace sluice::c_api
