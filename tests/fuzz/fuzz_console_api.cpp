// Fuzz target: the console's JSON API as its HTTP layer calls it, with query parameters and POST
// bodies from the input, on a sluice file with events, consumers and dead letters. Every call
// must answer, or throw an error the HTTP layer turns into a 4xx or 503 (ApiError, UsageError,
// FileNotReady, sluice::Error); anything else would be a 500. The answer must serialize.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "console_api.hpp"
#include "file_not_ready.hpp"
#include "fuzz_input.hpp"
#include "sample_file.hpp"
#include "scratch_directory.hpp"
#include "sluice/error.hpp"
#include "usage_error.hpp"

namespace {

using sluice::cli::ApiParams;
using sluice::cli::ConsoleApi;
using sluice::cli::Json;

// Every name a GET call knows, so that most parameters reach the code behind the name check.
const char* const kParamNames[] = {"topic", "key",   "id",     "dedup_key",    "since",
                                   "until", "after", "limit",  "after_seq",    "consumer",
                                   "state", "token", "groups", "group_offset", "fingerprint"};
// And every field of a POST body.
const char* const kBodyNames[] = {"consumer",        "ids",        "fingerprint", "dry_run",
                                  "rate_per_second", "note",       "since",       "until",
                                  "from_event",      "older_than", "force"};

ConsoleApi& api() {
  static ConsoleApi* api = [] {
    sluice::cli::Session session;
    session.db_path = sluice::fuzz::scratch_directory() + "/console.sluice";
    sluice::fuzz::write_sample_file(session.db_path);
    auto* made = new ConsoleApi(session, false);
    // A paced replay returns at its first pause instead of waiting out the rate.
    made->stop();
    return made;
  }();
  return *api;
}

ApiParams params_from(sluice::fuzz::FuzzInput& in) {
  ApiParams params;
  const int count = in.byte() % 5;
  for (int i = 0; i < count; ++i) {
    const std::uint8_t pick = in.byte();
    std::string name = pick < 240 ? kParamNames[pick % std::size(kParamNames)] : in.text();
    params.emplace(std::move(name), in.text());
  }
  return params;
}

// A body as the page would send one: an object of known fields with values from the input
// (parsed as JSON where they are JSON), or the input's text as the whole body.
Json body_from(sluice::fuzz::FuzzInput& in) {
  if (in.byte() & 1) return Json::parse(in.rest(), nullptr, false);
  Json body = Json::object();
  const int count = in.byte() % 5;
  for (int i = 0; i < count; ++i) {
    const char* name = kBodyNames[in.byte() % std::size(kBodyNames)];
    const std::string value = in.text();
    Json parsed = Json::parse(value, nullptr, false);
    body[name] = parsed.is_discarded() ? Json(value) : parsed;
  }
  return body;
}

Json call(sluice::fuzz::FuzzInput& in) {
  switch (in.byte() % 9) {
    case 0:
      return api().events(params_from(in));
    case 1:
      return api().dead_letters(params_from(in));
    case 2:
      return api().audit(params_from(in));
    case 3:
      return api().event(in.rest());
    case 4:
      return api().overview();
    default: {
      const int action = in.byte() % 4;
      const Json body = body_from(in);
      // The HTTP layer answers 400 to a body that does not parse.
      if (body.is_discarded()) return Json::object();
      switch (action) {
        case 0:
          return api().replay(body);
        case 1:
          return api().discard(body);
        case 2:
          return api().backfill(body);
        default:
          return api().prune(body);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sluice::fuzz::FuzzInput in(data, size);
  std::string answer;
  try {
    answer = sluice::cli::json_text(call(in));
  } catch (const sluice::cli::ApiError& e) {
    answer = sluice::cli::json_text(Json{{"error", e.what()}});
  } catch (const sluice::cli::UsageError& e) {
    answer = sluice::cli::json_text(Json{{"error", e.what()}});
  } catch (const sluice::cli::FileNotReady& e) {
    answer = sluice::cli::json_text(Json{{"error", e.what()}});
  } catch (const sluice::Error& e) {
    answer = sluice::cli::json_text(Json{{"error", e.what()}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "console API: the console would answer 500: %s\n", e.what());
    std::abort();
  }
  return 0;
}
