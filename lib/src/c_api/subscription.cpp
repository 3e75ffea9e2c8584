// The C handler's result turned into what a C++ handler asks of its Context.
#include "subscription.hpp"

#include <cstring>
#include <string>

#include "../event_codec.hpp"
#include "sluice/error.hpp"

namespace sluice::c_api {
namespace {

// Calls the C handler on `event` and turns what it returns into what a C++ handler asks of its
// Context.
void call(sluice_handler handler, void* user_data, const Event& event, Context& context) {
  const std::string headers = event.headers.empty() ? "{}" : encode_headers(event.headers);
  const sluice_event view{
      .seq = event.seq,
      .id = event.id.c_str(),
      .topic = event.topic.c_str(),
      .payload = event.payload.c_str(),
      .key = event.key.c_str(),
      .dedup_key = event.dedup_key.c_str(),
      .headers = headers.c_str(),
      .created_at_ms = event.created_at.time_since_epoch().count(),
      .consumer = context.consumer().c_str(),
      .attempt = context.attempt(),
      .version = event.version,
  };
  sqlite3* conn = nullptr;
  try {
    conn = context.db().getHandle();
  } catch (const TransactionError&) {
    // An outside-transaction consumer: no transaction to offer.
  }
  sluice_outcome outcome{};
  const int kind = handler(user_data, &view, conn, &outcome);
  const std::string error(outcome.error, strnlen(outcome.error, sizeof outcome.error));
  switch (kind) {
    case SLUICE_DONE:
      return;
    case SLUICE_RETRY:
      context.retry(error);
      return;
    case SLUICE_PERMANENT:
      context.dead_letter(error);
      return;
    case SLUICE_SNOOZE:
      if (outcome.snooze_ms < 0) {
        context.retry("sluice: the handler snoozed for a negative time (" +
                      std::to_string(outcome.snooze_ms) + " ms)");
      } else {
        context.snooze(Duration(outcome.snooze_ms));
      }
      return;
    case SLUICE_THROTTLE:
      if (outcome.snooze_ms < 0) {
        context.retry("sluice: the handler throttled for a negative time (" +
                      std::to_string(outcome.snooze_ms) + " ms)");
      } else {
        context.throttle(Duration(outcome.snooze_ms), error);
      }
      return;
    default:
      context.retry("sluice: the handler returned " + std::to_string(kind) +
                    ", none of SLUICE_DONE, SLUICE_RETRY, SLUICE_PERMANENT, SLUICE_SNOOZE, "
                    "SLUICE_THROTTLE");
  }
}

}  // namespace

ConsumerOptions to_consumer_options(const sluice_consumer_options& options) {
  RetryPolicy retry;
  retry.max_attempts = options.max_attempts;
  retry.initial_backoff = Duration(options.initial_backoff_ms);
  retry.max_backoff = Duration(options.max_backoff_ms);
  return {.mode = options.outside_transaction != 0 ? DeliveryMode::kOutsideTransaction
                                                   : DeliveryMode::kInTransaction,
          .ordered = options.ordered != 0,
          .start_from = options.start_from_oldest != 0 ? StartFrom::kOldest : StartFrom::kNow,
          .retry = retry};
}

ConsumerOptions to_consumer_options(const sluice_consumer_options_v2& options) {
  ConsumerOptions converted = to_consumer_options(options.base);
  if (options.breaker_failures != 0) {
    converted.breaker = Breaker{.failures = options.breaker_failures,
                                .cool_down = Duration(options.breaker_cool_down_ms),
                                .max_cool_down = Duration(options.breaker_max_cool_down_ms)};
  }
  return converted;
}

Handler to_handler(sluice_handler handler, void* user_data) {
  return [handler, user_data](const Event& event, Context& context) {
    call(handler, user_data, event, context);
  };
}

}  // namespace sluice::c_api
