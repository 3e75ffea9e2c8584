#include <doctest/doctest.h>

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
