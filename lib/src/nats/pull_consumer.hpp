// A durable JetStream pull consumer: fetch in batches, acknowledge, and restart delivery at a
// chosen stream sequence.
#pragma once

#include <nats/nats.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jetstream_client.hpp"

namespace sluice::nats {

// Not thread-safe. One fetched message; must not outlive the PullConsumer that fetched it.
class FetchedMessage {
 public:
  explicit FetchedMessage(natsMsg* message);
  ~FetchedMessage();
  FetchedMessage(FetchedMessage&& other) noexcept;
  FetchedMessage& operator=(FetchedMessage&&) = delete;
  FetchedMessage(const FetchedMessage&) = delete;
  FetchedMessage& operator=(const FetchedMessage&) = delete;

  natsMsg* get() const { return message_; }
  // The message's position in its stream.
  std::uint64_t stream_seq() const { return stream_seq_; }
  // Messages of the stream after this one that the consumer had not delivered yet when it
  // delivered this one.
  std::uint64_t pending() const { return pending_; }
  // Done: JetStream will not deliver it again, nor, when the consumer acks cumulatively, any
  // message before it. Throws NatsError.
  void ack();
  // ack(), returning once the server confirms it, by when it has also processed every earlier
  // ack and terminate of this connection. Throws NatsError.
  void ack_confirmed();
  // Never deliverable: JetStream stops redelivering it. Throws NatsError.
  void terminate();

 private:
  natsMsg* message_;
  std::uint64_t stream_seq_ = 0;
  std::uint64_t pending_ = 0;
};

struct PullConsumerSpec {
  std::string stream;
  std::string durable;
  Duration ack_wait = std::chrono::seconds(30);
  // Delivered but unacknowledged messages, at most.
  int max_ack_pending = 1024;
};

// Not thread-safe.
class PullConsumer {
 public:
  // Binds to the durable, creating it (from the stream's start) if missing. Throws NatsError.
  PullConsumer(JetStreamClient& client, PullConsumerSpec spec);
  ~PullConsumer();
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;

  // Up to `batch` messages, waiting at most `wait`; empty when none came. Throws NatsError.
  std::vector<FetchedMessage> fetch(int batch, Duration wait);

  // Whether one ack settles every message before it too (AckAll). Durables this class creates
  // do; one made by an older sluice with AckExplicit needs each message acknowledged.
  bool acks_cumulatively() const { return acks_cumulatively_; }

  // Recreates the durable so that delivery restarts, in stream order, at `start_seq`; what it
  // had delivered and not had acknowledged is forgotten. Throws NatsError.
  void restart_at(std::uint64_t start_seq);

 private:
  void create(std::uint64_t start_seq);
  void subscribe();
  void unsubscribe();

  JetStreamClient& client_;
  PullConsumerSpec spec_;
  natsSubscription* subscription_ = nullptr;
  bool acks_cumulatively_ = true;
  // Set while a restart_at() has not completed, so the next fetch finishes it.
  std::optional<std::uint64_t> unfinished_restart_;
};

}  // namespace sluice::nats
