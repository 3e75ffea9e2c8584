#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fingerprint.hpp"

using sluice::cli::error_fingerprint;

TEST_CASE("numbers, IDs and quoted values are normalised") {
  CHECK(error_fingerprint("order 42 failed: card 'x1' declined (id 01JD0F3W5R8M9K2Q7Y4T6V1B3N)") ==
        "order <n> failed: card '<v>' declined (id <id>)");
  CHECK(error_fingerprint("timeout after 3.5 s, retry -1") == "timeout after <n> s, retry <n>");
  CHECK(error_fingerprint("user \"bob\" missing") == "user \"<v>\" missing");
  CHECK(error_fingerprint("row 9b2f6c1e-3a4d-4e5f-8a9b-0c1d2e3f4a5b locked") == "row <id> locked");
  CHECK(error_fingerprint("digest deadbeef12 mismatch") == "digest <id> mismatch");
}

TEST_CASE("errors differing only in data share a fingerprint") {
  CHECK(error_fingerprint("HTTP 503 from payments for order 17") ==
        error_fingerprint("HTTP 502 from payments for order 123456"));
  CHECK(error_fingerprint("customer 'alice' not found") ==
        error_fingerprint("customer 'bob' not found"));
}

TEST_CASE("errors differing in words keep distinct fingerprints") {
  CHECK(error_fingerprint("card declined for order 1") !=
        error_fingerprint("card expired for order 1"));
}

TEST_CASE("short words with digits, apostrophes and unclosed quotes are kept") {
  CHECK(error_fingerprint("utf8 v2 can't parse 'x") == "utf8 v2 can't parse 'x");
}

TEST_CASE("whitespace collapses and trims") {
  CHECK(error_fingerprint("  a\t\tb\n c  ") == "a b c");
  CHECK(error_fingerprint("") == "");
}

namespace {

// Real-looking error texts, by the group an operator expects them in: each group's texts differ
// only in data (numbers with units, hex, UUIDs, quoted values, IDs), and no two groups share a
// fingerprint.
const std::vector<std::vector<std::string>> kCorpus = {
    {"gateway timeout after 1036ms", "gateway timeout after 1147ms", "gateway timeout after 37ms",
     "gateway timeout after 5000ms", "gateway timeout after 2ms", "gateway timeout after 998ms",
     "gateway timeout after 12ms", "gateway timeout after 30001ms", "gateway timeout after 450ms",
     "gateway timeout after 1ms", "gateway timeout after 77ms", "gateway timeout after 6150ms",
     "gateway timeout after 99ms", "gateway timeout after 1200ms"},
    {"context deadline exceeded (Client.Timeout exceeded while awaiting headers) after 2.5s",
     "context deadline exceeded (Client.Timeout exceeded while awaiting headers) after 30s",
     "context deadline exceeded (Client.Timeout exceeded while awaiting headers) after 0.25s"},
    {"payload too large: 10KiB over the 256KiB limit",
     "payload too large: 3KiB over the 256KiB limit",
     "payload too large: 1.5KiB over the 64KiB limit"},
    {"segfault at 0x7ffd5a3c in libpq.so.5", "segfault at 0x0 in libpq.so.5",
     "segfault at 0xDEADBEEF in libpq.so.5"},
    {"object 3f9a1c0e not found in bucket 'invoices-eu'",
     "object a0b1c2d3e4f5 not found in bucket 'invoices-us'",
     "object 9e107d9d372bb6826bd81d3542a419d6 not found in bucket 'archive'"},
    {"duplicate key value violates unique constraint \"orders_pkey\": Key (id)=(4711) already "
     "exists",
     "duplicate key value violates unique constraint \"users_email\": Key (id)=(12) already "
     "exists"},
    {"customer 7c9e6679-7425-40de-944b-e07fc1f90ae7 has no billing address",
     "customer 7C9E6679-7425-40DE-944B-E07FC1F90AE7 has no billing address",
     "customer f47ac10b-58cc-4372-a567-0e02b2c3d479 has no billing address"},
    {"HTTP 503 Service Unavailable from https://pay.example.com/v2/charges (retry in 30s)",
     "HTTP 502 Service Unavailable from https://pay.example.com/v2/charges (retry in 2m)"},
    {"connect ECONNREFUSED 10.0.3.17:5432", "connect ECONNREFUSED 127.0.0.1:6379"},
    {"rate limited: 429 after 1m30s, quota 5000/h", "rate limited: 429 after 2m5s, quota 100/h"},
    {"SMTP 550 mailbox 'bob@example.com' unavailable",
     "SMTP 550 mailbox 'alice.smith@example.org' unavailable"},
    {"disk full: wrote 512MB of 2GB to /var/lib/app/spool",
     "disk full: wrote 1.2GB of 4GB to /var/lib/app/spool"},
    {"order ord-42 rejected: card declined", "order ord-1234 rejected: card declined"},
    {"lock wait timeout exceeded; try restarting transaction (waited 50.3 s)",
     "lock wait timeout exceeded; try restarting transaction (waited 7 s)"},
};

}  // namespace

TEST_CASE("a corpus of real error texts groups by what went wrong, not by its data") {
  std::map<std::string, std::size_t> group_of;
  for (std::size_t group = 0; group < kCorpus.size(); ++group) {
    const std::string first = error_fingerprint(kCorpus[group].front());
    for (const std::string& text : kCorpus[group]) {
      INFO(text);
      CHECK(error_fingerprint(text) == first);
    }
    INFO(first);
    CHECK(group_of.emplace(first, group).second);  // no other group has it
  }
}

TEST_CASE("fourteen timeouts with different millisecond values make one group") {
  std::set<std::string> fingerprints;
  for (const std::string& text : kCorpus.front()) fingerprints.insert(error_fingerprint(text));
  REQUIRE(fingerprints.size() == 1);
  CHECK(*fingerprints.begin() == "gateway timeout after <duration>");
  CHECK(error_fingerprint("payload of 10KiB, waited 2.5s") ==
        "payload of <size>, waited <duration>");
  CHECK(error_fingerprint("segfault at 0x7ffd5a3c") == "segfault at <n>");
  CHECK(error_fingerprint("retry in 1m30s") == "retry in <duration>");
}

TEST_CASE("durations in any unit group together; other units are kept; words with digits stay") {
  // Go's time.Duration prints 850ms and 1.5s for the same kind of wait.
  CHECK(error_fingerprint("took 850ms") == error_fingerprint("took 1.5s"));
  CHECK(error_fingerprint("5xx from upstream") == "<n>xx from upstream");
  CHECK(error_fingerprint("utf8 v2 sha256 x86_64 ipv4") == "utf8 v2 sha256 x86_64 ipv4");
  CHECK(error_fingerprint("user-12 locked") == "user-<n> locked");
}
