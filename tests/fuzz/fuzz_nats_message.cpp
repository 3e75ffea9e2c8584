// Fuzz target: the ingester's decoding of a NATS message into an event. The message is built
// from the input's bytes as libnats builds one it received (header block, then payload), and
// decoded into the same event again and again, as the ingester reuses the events of its last
// fetch. A message is decoded or refused with InvalidArgument; a decoded event's own headers are
// exactly the message's, none left over from an earlier message.
#include <nats/nats.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "fuzz_input.hpp"
#include "nats/message_headers.hpp"
#include "sluice/error.hpp"

// libnats's constructor of a received message (msg.h): the message its parser makes of a HMSG.
// Not in nats.h, but exported by libnats 3.x; the only way to a received message without a
// server.
extern "C" natsStatus natsMsg_create(natsMsg** newMsg, const char* subject, int subjLen,
                                     const char* reply, int replyLen, const char* buf, int bufLen,
                                     int hdrLen);

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "nats message: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nats_Open(-1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static sluice::NewEvent event;
  sluice::fuzz::FuzzInput in(data, size);
  std::string subject = in.text();
  if (subject.empty()) subject = "orders";
  const bool with_prefix = in.byte() & 1;
  std::string header = in.text();
  // Most messages a broker delivers have a well-formed status line.
  if (with_prefix) header = "NATS/1.0\r\n" + header + "\r\n";
  const std::string buffer = header + in.rest();
  natsMsg* message = nullptr;
  if (natsMsg_create(&message, subject.data(), static_cast<int>(subject.size()), nullptr, 0,
                     buffer.data(), static_cast<int>(buffer.size()),
                     static_cast<int>(header.size())) != NATS_OK) {
    return 0;
  }
  try {
    sluice::nats::event_from_message(message, event);
    std::set<std::string> names;
    const char** keys = nullptr;
    int count = 0;
    if (natsMsgHeader_Keys(message, &keys, &count) == NATS_OK) {
      names.insert(keys, keys + count);
      std::free(keys);
    }
    for (const auto& [name, value] : event.headers) {
      if (names.count(name) == 0) fail("decoded header '" + name + "' is not in the message");
    }
  } catch (const sluice::InvalidArgument&) {
  }
  natsMsg_Destroy(message);
  return 0;
}
