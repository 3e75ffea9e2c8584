// Dead-letter triage from C: list, replay and discard, as the C++ functions do them.
#include "sluice/dead_letters.hpp"

#include <string>
#include <vector>

#include "database_handle.hpp"
#include "packed_rows.hpp"
#include "result_codes.hpp"
#include "sluice/error.hpp"
#include "sluice/sluice.h"

namespace sluice::c_api {
namespace {

DeadLetterFilter to_filter(const sluice_dead_letter_filter* filter) {
  DeadLetterFilter converted;
  if (filter == nullptr) return converted;
  if (filter->event_id_count != 0) {
    require(filter->event_ids, "sluice: dead letters: filter->event_ids is NULL");
  }
  for (std::size_t i = 0; i < filter->event_id_count; ++i) {
    if (filter->event_ids[i] == nullptr) {
      throw sluice::InvalidArgument("sluice: dead letters: filter->event_ids[" + std::to_string(i) +
                                    "] is NULL");
    }
    converted.event_ids.emplace_back(filter->event_ids[i]);
  }
  if (filter->consumer != nullptr) converted.consumer = filter->consumer;
  if (filter->topic != nullptr) converted.topic = filter->topic;
  if (filter->error_contains != nullptr) converted.error_contains = filter->error_contains;
  if (filter->since_ms != 0) converted.since = TimePoint(Duration(filter->since_ms));
  if (filter->until_ms != 0) converted.until = TimePoint(Duration(filter->until_ms));
  converted.include_discarded = filter->include_discarded != 0;
  return converted;
}

std::int64_t ms(TimePoint t) { return t.time_since_epoch().count(); }

}  // namespace
}  // namespace sluice::c_api

extern "C" {

int sluice_dead_letters_list(sluice_db* db, const sluice_dead_letter_filter* filter,
                             sluice_dead_letter** letters, size_t* count, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_dead_letters_list");
    require(letters, "sluice_dead_letters_list: letters (the out parameter) is NULL");
    require(count, "sluice_dead_letters_list: count (the out parameter) is NULL");
    const std::vector<sluice::DeadLetter> read =
        sluice::list_dead_letters(use.db(), to_filter(filter));
    using Rows = PackedRows<sluice_dead_letter>;
    std::size_t text_bytes = 0;
    for (const auto& one : read) {
      for (const std::string* text : {&one.event_id, &one.consumer, &one.topic, &one.key,
                                      &one.reason, &one.last_error, &one.note}) {
        text_bytes += Rows::bytes(*text);
      }
    }
    Rows rows(read.size(), text_bytes);
    for (std::size_t i = 0; i < read.size(); ++i) {
      const sluice::DeadLetter& one = read[i];
      rows.row(i) = {.event_id = rows.text(one.event_id),
                     .event_seq = one.event_seq,
                     .consumer = rows.text(one.consumer),
                     .topic = rows.text(one.topic),
                     .key = rows.text(one.key),
                     .reason = rows.text(one.reason),
                     .last_error = rows.text(one.last_error),
                     .attempts = one.attempts,
                     .first_failed_at_ms = ms(one.first_failed_at),
                     .last_failed_at_ms = ms(one.last_failed_at),
                     .discarded = one.discarded ? 1 : 0,
                     .note = rows.text(one.note)};
    }
    *count = rows.size();
    *letters = rows.release();
  });
}

int sluice_dead_letters_replay(sluice_db* db, const sluice_dead_letter_filter* filter,
                               int64_t* replayed, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_dead_letters_replay");
    require(filter,
            "sluice_dead_letters_replay: filter is NULL (a zeroed filter replays every dead "
            "letter)");
    const long long done = sluice::replay_dead_letters(use.db(), to_filter(filter));
    if (replayed != nullptr) *replayed = done;
  });
}

int sluice_dead_letters_discard(sluice_db* db, const sluice_dead_letter_filter* filter,
                                const char* note, int64_t* discarded, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_dead_letters_discard");
    require(filter,
            "sluice_dead_letters_discard: filter is NULL (a zeroed filter discards every dead "
            "letter)");
    require(note, "sluice_dead_letters_discard: note is NULL");
    const long long done = sluice::discard_dead_letters(use.db(), to_filter(filter), note);
    if (discarded != nullptr) *discarded = done;
  });
}

}  // extern "C"
