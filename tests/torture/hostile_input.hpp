// One hostile enqueue/receive input, as the fuzz target and the corpus replay feed it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::torture {

// Splits `data` at 0x1F bytes into: operation ('e' enqueue_now, 'r' receive, 'b' enqueue_batch
// in a transaction), topic, payload, key, id, dedup key, then header name/value pairs; feeds it
// to an Outbox on an in-memory database kept across calls. Returns "" when sluice behaved
// (stored it, reported a duplicate, or refused it with a sluice::Error and wrote nothing), else
// what went wrong. Not thread-safe.
std::string check_hostile_input(const std::uint8_t* data, std::size_t size);

}  // namespace sluice::torture
