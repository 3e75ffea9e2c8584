#include "renewing_client.hpp"

namespace sluice::nats {

RenewingClient::RenewingClient(ConnectionSettings settings,
                               std::chrono::steady_clock::duration patience)
    : settings_(std::move(settings)),
      patience_(patience),
      client_(std::make_unique<JetStreamClient>(settings_)),
      unconnected_since_(std::chrono::steady_clock::now()) {}

bool RenewingClient::connected() {
  if (client_->connected()) {
    unconnected_since_.reset();
    return true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!unconnected_since_) {
    unconnected_since_ = now;
  } else if (now - *unconnected_since_ >= patience_) {
    client_.reset();  // the old connection closes before the new one opens
    client_ = std::make_unique<JetStreamClient>(settings_);
    ++generation_;
    unconnected_since_ = now;
  }
  return client_->connected();
}

}  // namespace sluice::nats
