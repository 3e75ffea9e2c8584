// A RAII client for NATS JetStream over libnats: one connection that reconnects on its own, stream
// set-up, and publishing with a bounded number of acknowledgements outstanding.
#pragma once

#include <nats/nats.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/clock.hpp"
#include "sluice/error.hpp"
#include "sluice/event.hpp"

namespace sluice::nats {

// A NATS operation failed; what() names the operation and libnats' reason.
class NatsError : public Error {
 public:
  NatsError(const std::string& operation, natsStatus status, const std::string& detail = {});
  natsStatus status() const { return status_; }

 private:
  natsStatus status_;
};

struct ConnectionSettings {
  // One URL or a comma-separated list, e.g. "nats://127.0.0.1:4222,nats://127.0.0.1:4223".
  std::string url = "nats://127.0.0.1:4222";
  // Shown by the server in its connection list.
  std::string name = "sluice";
  Duration connect_timeout = std::chrono::seconds(2);
  // Pause between reconnect attempts; the client never gives up reconnecting.
  Duration reconnect_wait = std::chrono::milliseconds(250);
  // Deadline of JetStream API requests (stream and consumer management).
  Duration api_timeout = std::chrono::seconds(5);
  // Publishes whose acknowledgement has not arrived yet, at most.
  int max_outstanding_acks = 256;
  // false: the constructor returns even when no server answers yet and keeps trying in the
  // background, so a relay can start while the broker is down.
  bool require_first_connect = true;
  // Called on libnats' thread whenever the client has connected again after losing its
  // connection, or made its first connect in the background: what waits for the broker can go on
  // at once. Must be quick and thread-safe; may be empty.
  std::function<void()> on_connected;
};

struct StreamSpec {
  std::string name;
  std::vector<std::string> subjects;
  // JetStream drops a second message with the same Nats-Msg-Id within this window.
  Duration duplicate_window = std::chrono::minutes(2);
  int replicas = 1;
  bool file_storage = true;
  // Largest message the stream stores; -1: the server's limit.
  std::int32_t max_message_bytes = -1;
};

// What share_stream() may do to a stream that exists.
enum class StreamUpdate {
  // Add the subjects it lacks.
  kAddSubjects,
  // Change nothing; refuse if it lacks a subject.
  kVerifyOnly,
};

// A NATS header as views of its name and value.
using HeaderView = std::pair<std::string_view, std::string_view>;

// One message to publish. It views its subject, ID, body and headers rather than copying them
// (copies of each event's payload and headers were a good part of a relay's time): what they view
// must outlive publish().
struct OutgoingMessage {
  std::string_view subject;
  // Sent as Nats-Msg-Id, the key of JetStream's duplicate window.
  std::string_view msg_id;
  std::string_view data;
  std::vector<HeaderView> headers;
};

// What became of one published message.
struct PublishOutcome {
  enum class Kind {
    kStored,
    // The stream already held a message with this Nats-Msg-Id inside its duplicate window.
    kDuplicate,
    // Worth trying again: timeout, no responders, connection lost, stream leader changing.
    kTransient,
    // Will never be accepted as is: no stream for the subject, message too large, bad header.
    kPermanent,
  };
  Kind kind = Kind::kTransient;
  std::string error;
  std::uint64_t stream_seq = 0;

  bool acknowledged() const { return kind == Kind::kStored || kind == Kind::kDuplicate; }
};

// Thread-safe: libnats connections may be shared, and publish() serialises itself.
class JetStreamClient {
 public:
  // Throws NatsError when require_first_connect is set and no server answers.
  explicit JetStreamClient(ConnectionSettings settings);
  ~JetStreamClient();
  JetStreamClient(const JetStreamClient&) = delete;
  JetStreamClient& operator=(const JetStreamClient&) = delete;

  bool connected() const;

  // Creates the stream, or updates its settings if it exists. Throws NatsError.
  void ensure_stream(const StreamSpec& spec);

  // Creates the stream from `spec` if none has its name. One that exists keeps every setting an
  // operator or another relay gave it (subjects, limits, duplicate window): with kAddSubjects
  // each subject of `spec` it does not take yet is added to its subjects, with kVerifyOnly
  // nothing changes. Throws NatsError when JetStream refuses or does not answer, and
  // sluice::Error naming the subjects missing when kVerifyOnly finds any.
  void share_stream(const StreamSpec& spec, StreamUpdate update);

  // Publishes every message in order, keeping at most max_outstanding_acks unacknowledged, and
  // waits until each is acknowledged, refused or older than `ack_timeout`. One outcome per
  // message, in order. Never throws for a broker failure: that is an outcome.
  std::vector<PublishOutcome> publish(std::span<const OutgoingMessage> messages,
                                      Duration ack_timeout);

  // Whether some stream listens on `subject`; nullopt when JetStream did not answer.
  std::optional<bool> subject_has_stream(const std::string& subject);

  natsConnection* connection() const { return connection_; }
  jsCtx* jetstream() const { return jetstream_; }
  const ConnectionSettings& settings() const { return settings_; }

 private:
  struct PendingBatch;
  // Creates the stream (false if one of its name exists) or, with `update`, sets its settings.
  bool write_stream(const StreamSpec& spec, bool update);
  static void on_reconnected(natsConnection* connection, void* closure);
  static void on_publish_ack(jsCtx* js, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error,
                             void* closure);
  void record_ack(natsMsg* msg, jsPubAck* ack, jsPubAckErr* error);
  void abandon_outstanding(PendingBatch& batch, Duration ack_timeout);
  void classify_no_responders(std::span<const OutgoingMessage> messages,
                              std::vector<PublishOutcome>& outcomes);

  ConnectionSettings settings_;
  natsOptions* options_ = nullptr;
  natsConnection* connection_ = nullptr;
  jsCtx* jetstream_ = nullptr;

  std::mutex publish_mutex_;
  std::mutex ack_mutex_;
  std::condition_variable ack_arrived_;
  PendingBatch* batch_ = nullptr;
};

// libnats' text for `status`.
std::string status_text(natsStatus status);

}  // namespace sluice::nats
