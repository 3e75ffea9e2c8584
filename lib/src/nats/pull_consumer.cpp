#include "pull_consumer.hpp"

#include <array>
#include <charconv>
#include <string_view>
#include <utility>

namespace sluice::nats {
namespace {

std::string js_detail(jsErrCode code) {
  return "JetStream error " + std::to_string(code) + ": " + nats_GetLastError(nullptr);
}

// What a JetStream message's reply subject says of it: its stream sequence and the messages
// pending after it, both 0 if it says nothing. The subject is
// $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>, or (newer
// servers) has <domain>.<account hash> before the stream and more tokens after the pending count.
// Read here rather than by natsMsg_GetMetaData, which copies the stream and consumer names into a
// structure of its own for every message.
struct AckSubject {
  std::uint64_t stream_seq = 0;
  std::uint64_t pending = 0;
};

std::uint64_t number(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : 0;
}

AckSubject parse_ack_subject(const char* reply) {
  constexpr std::string_view kPrefix = "$JS.ACK.";
  if (reply == nullptr) return {};
  std::string_view rest(reply);
  if (!rest.starts_with(kPrefix)) return {};
  rest.remove_prefix(kPrefix.size());
  std::array<std::string_view, 9> tokens;
  std::size_t count = 0;
  while (count < tokens.size()) {
    const std::size_t dot = rest.find('.');
    tokens[count++] = rest.substr(0, dot);
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  if (count != 7 && count != 9) return {};
  const std::size_t first = count == 7 ? 0 : 2;  // the stream's token
  return {number(tokens[first + 3]), number(tokens[first + 6])};
}

}  // namespace

FetchedMessage::FetchedMessage(natsMsg* message) : message_(message) {
  const AckSubject subject = parse_ack_subject(natsMsg_GetReply(message));
  stream_seq_ = subject.stream_seq;
  pending_ = subject.pending;
}

FetchedMessage::~FetchedMessage() { natsMsg_Destroy(message_); }

FetchedMessage::FetchedMessage(FetchedMessage&& other) noexcept
    : message_(std::exchange(other.message_, nullptr)),
      stream_seq_(other.stream_seq_),
      pending_(other.pending_) {}

void FetchedMessage::ack() {
  natsStatus status = natsMsg_Ack(message_, nullptr);
  if (status != NATS_OK) throw NatsError("ack", status);
}

void FetchedMessage::ack_confirmed() {
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status = natsMsg_AckSync(message_, nullptr, &code);
  if (status != NATS_OK) throw NatsError("ack", status, js_detail(code));
}

void FetchedMessage::terminate() {
  natsStatus status = natsMsg_Term(message_, nullptr);
  if (status != NATS_OK) throw NatsError("terminate", status);
}

PullConsumer::PullConsumer(JetStreamClient& client, PullConsumerSpec spec)
    : client_(client), spec_(std::move(spec)) {
  jsConsumerInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status = js_GetConsumerInfo(&info, client_.jetstream(), spec_.stream.c_str(),
                                         spec_.durable.c_str(), nullptr, &code);
  if (status == NATS_OK && info != nullptr && info->Config != nullptr)
    acks_cumulatively_ = info->Config->AckPolicy == js_AckAll;
  jsConsumerInfo_Destroy(info);
  if (status != NATS_OK) {
    if (code != JSConsumerNotFoundErr)
      throw NatsError("consumer info " + spec_.durable, status, js_detail(code));
    create(0);
  }
  subscribe();
}

PullConsumer::~PullConsumer() { unsubscribe(); }

void PullConsumer::create(std::uint64_t start_seq) {
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = spec_.durable.c_str();
  // The ingester commits messages in stream order, so one ack after each commit settles them
  // all: a message per batch to the server instead of one per message.
  config.AckPolicy = js_AckAll;
  config.AckWait = spec_.ack_wait.count() * 1'000'000;
  config.MaxAckPending = spec_.max_ack_pending;
  config.DeliverPolicy = start_seq == 0 ? js_DeliverAll : js_DeliverByStartSequence;
  config.OptStartSeq = start_seq;
  jsConsumerInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status =
      js_AddConsumer(&info, client_.jetstream(), spec_.stream.c_str(), &config, nullptr, &code);
  jsConsumerInfo_Destroy(info);
  if (status != NATS_OK)
    throw NatsError("create consumer " + spec_.durable + " on " + spec_.stream, status,
                    js_detail(code));
  acks_cumulatively_ = true;
}

void PullConsumer::subscribe() {
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = spec_.stream.c_str();
  options.Consumer = spec_.durable.c_str();
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status = js_PullSubscribe(&subscription_, client_.jetstream(), nullptr,
                                       spec_.durable.c_str(), nullptr, &options, &code);
  if (status != NATS_OK)
    throw NatsError("pull subscribe " + spec_.durable, status, js_detail(code));
}

void PullConsumer::unsubscribe() {
  if (subscription_ == nullptr) return;
  natsSubscription_Unsubscribe(subscription_);
  natsSubscription_Destroy(subscription_);
  subscription_ = nullptr;
}

std::vector<FetchedMessage> PullConsumer::fetch(int batch, Duration wait) {
  if (unfinished_restart_) restart_at(*unfinished_restart_);
  natsMsgList list{};
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status = natsSubscription_Fetch(&list, subscription_, batch, wait.count(), &code);
  std::vector<FetchedMessage> messages;
  messages.reserve(static_cast<std::size_t>(list.Count));
  for (int i = 0; i < list.Count; ++i) {
    messages.emplace_back(list.Msgs[i]);
    list.Msgs[i] = nullptr;
  }
  natsMsgList_Destroy(&list);
  if (status != NATS_OK && status != NATS_TIMEOUT && messages.empty())
    throw NatsError("fetch from " + spec_.durable, status, js_detail(code));
  return messages;
}

void PullConsumer::restart_at(std::uint64_t start_seq) {
  unfinished_restart_ = start_seq;
  unsubscribe();
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status = js_DeleteConsumer(client_.jetstream(), spec_.stream.c_str(),
                                        spec_.durable.c_str(), nullptr, &code);
  if (status != NATS_OK && code != JSConsumerNotFoundErr)
    throw NatsError("delete consumer " + spec_.durable, status, js_detail(code));
  create(start_seq);
  subscribe();
  unfinished_restart_.reset();
}

}  // namespace sluice::nats
