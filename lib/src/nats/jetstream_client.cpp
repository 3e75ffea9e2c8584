#include "jetstream_client.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "message_headers.hpp"

namespace sluice::nats {
namespace {

std::vector<std::string> split_urls(const std::string& list) {
  std::vector<std::string> urls;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) urls.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return urls;
}

std::int64_t to_ms(Duration d) { return d.count(); }
std::int64_t to_ns(Duration d) { return d.count() * 1'000'000; }

void check(natsStatus status, const std::string& operation) {
  if (status != NATS_OK) throw NatsError(operation, status);
}

// JetStream errors that no retry can cure.
bool is_permanent_jetstream_error(jsErrCode code) {
  return code == JSStreamMessageExceedsMaximumErr || code == JSStreamSealedErr;
}

// NATS subjects are dot-separated non-empty tokens without whitespace; a publish subject may not
// hold the wildcards * and >.
std::string subject_problem(std::string_view subject) {
  if (subject.empty()) return "empty subject";
  auto quoted = [&] { return "subject '" + std::string(subject) + "'"; };
  if (subject.front() == '.' || subject.back() == '.' || subject.find("..") != std::string::npos)
    return quoted() + " has an empty token";
  for (char c : subject) {
    if (c == '*' || c == '>') return quoted() + " holds a wildcard";
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
      return quoted() + " holds whitespace or a control character";
  }
  return {};
}

// libnats writes the connection name into its CONNECT JSON as it is: a quote or backslash in it
// (from a consumer or durable name) made nats-server refuse every connection, and the client
// kept trying in silence. Such characters, and control characters, become '_'.
std::string connect_safe_name(std::string name) {
  for (char& c : name)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < ' ' || c == 0x7f) c = '_';
  return name;
}

// Whether a stream taking subject (or wildcard) `pattern` stores every message published to a
// subject `subject` matches: token by token, '*' takes any one token and '>' the rest.
bool covers(std::string_view pattern, std::string_view subject) {
  while (true) {
    const std::size_t p_end = std::min(pattern.find('.'), pattern.size());
    const std::size_t s_end = std::min(subject.find('.'), subject.size());
    const std::string_view p = pattern.substr(0, p_end);
    const std::string_view s = subject.substr(0, s_end);
    if (p == ">") return !s.empty();
    if (s == ">" || (p != "*" && p != s)) return false;
    if (p_end == pattern.size() || s_end == subject.size())
      return p_end == pattern.size() && s_end == subject.size();
    pattern.remove_prefix(p_end + 1);
    subject.remove_prefix(s_end + 1);
  }
}

// A JetStream API request's answer; throws when there is none or it is not JSON. An answer
// holding an error is returned as it is.
nlohmann::json api_request(natsConnection* connection, const std::string& subject,
                           const std::string& body, Duration timeout,
                           const std::string& operation) {
  natsMsg* reply = nullptr;
  const natsStatus status = natsConnection_Request(&reply, connection, subject.c_str(), body.data(),
                                                   static_cast<int>(body.size()), to_ms(timeout));
  if (status != NATS_OK) throw NatsError(operation, status);
  auto answer = nlohmann::json::parse(
      std::string_view(natsMsg_GetData(reply), natsMsg_GetDataLength(reply)), nullptr, false);
  natsMsg_Destroy(reply);
  if (answer.is_discarded() || !answer.is_object())
    throw NatsError(operation, NATS_ERR, "JetStream answered with something other than JSON");
  return answer;
}

[[noreturn]] void throw_api_error(const nlohmann::json& answer, const std::string& operation) {
  const auto& error = answer["error"];
  throw NatsError(operation, NATS_ERR,
                  "JetStream error " + std::to_string(error.value("err_code", 0)) + ": " +
                      error.value("description", std::string("no description")));
}

}  // namespace

std::string status_text(natsStatus status) { return natsStatus_GetText(status); }

NatsError::NatsError(const std::string& operation, natsStatus status, const std::string& detail)
    : Error("NATS " + operation + " failed: " + status_text(status) +
            (detail.empty() ? std::string() : " (" + detail + ")")),
      status_(status) {}

// The bookkeeping of one publish() call; the ack handler fills it from libnats' thread. libnats
// hands the ack handler the very message it was given, so the message's address finds its
// outcome: no header parsing, and two messages with one ID stay apart.
struct JetStreamClient::PendingBatch {
  std::vector<PublishOutcome> outcomes;
  std::unordered_map<const natsMsg*, std::size_t> index_by_message;
};

JetStreamClient::JetStreamClient(ConnectionSettings settings) : settings_(std::move(settings)) {
  try {
    check(natsOptions_Create(&options_), "options create");
    std::vector<std::string> urls = split_urls(settings_.url);
    std::vector<const char*> servers;
    for (const auto& url : urls) servers.push_back(url.c_str());
    check(natsOptions_SetServers(options_, servers.data(), static_cast<int>(servers.size())),
          "set servers " + settings_.url);
    check(natsOptions_SetNoRandomize(options_, true), "set no randomize");
    check(natsOptions_SetName(options_, connect_safe_name(settings_.name).c_str()), "set name");
    check(natsOptions_SetTimeout(options_, to_ms(settings_.connect_timeout)), "set timeout");
    check(natsOptions_SetMaxReconnect(options_, -1), "set max reconnect");
    check(natsOptions_SetReconnectWait(options_, to_ms(settings_.reconnect_wait)),
          "set reconnect wait");
    check(natsOptions_SetPingInterval(options_, 2000), "set ping interval");
    // With a connected handler, a first connect that fails is retried in the background instead
    // of failing the constructor.
    check(natsOptions_SetRetryOnFailedConnect(
              options_, !settings_.require_first_connect,
              settings_.require_first_connect ? nullptr : &JetStreamClient::on_reconnected, this),
          "set retry on failed connect");
    check(natsOptions_SetReconnectedCB(options_, &JetStreamClient::on_reconnected, this),
          "set reconnected handler");
    natsStatus status = natsConnection_Connect(&connection_, options_);
    if (status != NATS_OK && status != NATS_NOT_YET_CONNECTED)
      throw NatsError("connect to " + settings_.url, status);

    jsOptions js_options;
    check(jsOptions_Init(&js_options), "jetstream options init");
    js_options.Wait = to_ms(settings_.api_timeout);
    js_options.PublishAsync.MaxPending = settings_.max_outstanding_acks;
    js_options.PublishAsync.AckHandler = &JetStreamClient::on_publish_ack;
    js_options.PublishAsync.AckHandlerClosure = this;
    check(natsConnection_JetStream(&jetstream_, connection_, &js_options), "jetstream context");
  } catch (...) {
    jsCtx_Destroy(jetstream_);
    natsConnection_Destroy(connection_);
    natsOptions_Destroy(options_);
    throw;
  }
}

JetStreamClient::~JetStreamClient() {
  natsConnection_Close(connection_);
  jsCtx_Destroy(jetstream_);
  natsConnection_Destroy(connection_);
  natsOptions_Destroy(options_);
}

bool JetStreamClient::connected() const {
  return natsConnection_Status(connection_) == NATS_CONN_STATUS_CONNECTED;
}

void JetStreamClient::ensure_stream(const StreamSpec& spec) {
  if (!write_stream(spec, false)) write_stream(spec, true);
}

bool JetStreamClient::write_stream(const StreamSpec& spec, bool update) {
  std::vector<const char*> subjects;
  for (const auto& s : spec.subjects) subjects.push_back(s.c_str());
  jsStreamConfig config;
  check(jsStreamConfig_Init(&config), "stream config init");
  config.Name = spec.name.c_str();
  config.Subjects = subjects.data();
  config.SubjectsLen = static_cast<int>(subjects.size());
  config.Storage = spec.file_storage ? js_FileStorage : js_MemoryStorage;
  config.Replicas = spec.replicas;
  config.Duplicates = to_ns(spec.duplicate_window);
  config.MaxMsgSize = spec.max_message_bytes;

  jsStreamInfo* info = nullptr;
  jsErrCode error_code = static_cast<jsErrCode>(0);
  const natsStatus status = update
                                ? js_UpdateStream(&info, jetstream_, &config, nullptr, &error_code)
                                : js_AddStream(&info, jetstream_, &config, nullptr, &error_code);
  jsStreamInfo_Destroy(info);
  if (status == NATS_OK) return true;
  if (!update && error_code == JSStreamNameExistErr) return false;
  throw NatsError(
      "ensure stream " + spec.name, status,
      "JetStream error " + std::to_string(error_code) + ": " + nats_GetLastError(nullptr));
}

void JetStreamClient::share_stream(const StreamSpec& spec, StreamUpdate update) {
  const std::string operation = "share stream " + spec.name;
  const Duration timeout = settings_.api_timeout;
  // Two relays starting at once may both find the stream missing, or lacking their subjects, and
  // both write it, the second without the first's subject: each reads the stream again after its
  // write and adds what went missing.
  constexpr int kTries = 5;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    nlohmann::json info =
        api_request(connection_, "$JS.API.STREAM.INFO." + spec.name, "", timeout, operation);
    if (info.contains("error")) {
      if (info["error"].value("err_code", 0) != JSStreamNotFoundErr)
        throw_api_error(info, operation);
      // Created by another relay meanwhile: read it again.
      if (write_stream(spec, false)) return;
      continue;
    }
    nlohmann::json config = std::move(info["config"]);
    nlohmann::json& subjects = config["subjects"];
    if (!subjects.is_array()) subjects = nlohmann::json::array();
    std::vector<std::string> missing;
    for (const std::string& wanted : spec.subjects) {
      bool taken = false;
      for (const auto& have : subjects)
        taken = taken || (have.is_string() && covers(have.get<std::string>(), wanted));
      if (!taken) missing.push_back(wanted);
    }
    if (missing.empty()) return;
    if (update == StreamUpdate::kVerifyOnly) {
      std::string list;
      for (const auto& subject : missing) list += (list.empty() ? "'" : ", '") + subject + "'";
      throw Error("JetStream stream '" + spec.name + "' does not take subject " + list +
                  ", and the relay may not update it: add the subjects to the stream");
    }
    if (attempt + 1 == kTries) break;
    // The stream's own configuration, every field kept (those libnats does not know too), with
    // the subjects added.
    for (const auto& subject : missing) subjects.push_back(subject);
    nlohmann::json answer = api_request(connection_, "$JS.API.STREAM.UPDATE." + spec.name,
                                        config.dump(), timeout, operation);
    if (answer.contains("error")) throw_api_error(answer, operation);
  }
  throw NatsError(operation, NATS_ERR,
                  "its subjects kept changing under concurrent updates; try again");
}

std::optional<bool> JetStreamClient::subject_has_stream(const std::string& subject) {
  const std::string request = nlohmann::json{{"subject", subject}}.dump();
  natsMsg* reply = nullptr;
  natsStatus status = natsConnection_RequestString(&reply, connection_, "$JS.API.STREAM.NAMES",
                                                   request.c_str(), to_ms(settings_.api_timeout));
  if (status != NATS_OK) return std::nullopt;
  std::string body(natsMsg_GetData(reply), natsMsg_GetDataLength(reply));
  natsMsg_Destroy(reply);
  auto answer = nlohmann::json::parse(body, nullptr, false);
  if (answer.is_discarded() || answer.contains("error")) return std::nullopt;
  return answer.value("total", 0) > 0;
}

void JetStreamClient::on_reconnected(natsConnection*, void* closure) {
  const auto& on_connected = static_cast<JetStreamClient*>(closure)->settings_.on_connected;
  if (on_connected) on_connected();
}

void JetStreamClient::on_publish_ack(jsCtx*, natsMsg* msg, jsPubAck* ack, jsPubAckErr* error,
                                     void* closure) {
  static_cast<JetStreamClient*>(closure)->record_ack(msg, ack, error);
  natsMsg_Destroy(msg);
}

void JetStreamClient::record_ack(natsMsg* msg, jsPubAck* ack, jsPubAckErr* error) {
  std::lock_guard lock(ack_mutex_);
  if (batch_ == nullptr) return;
  auto found = batch_->index_by_message.find(msg);
  if (found == batch_->index_by_message.end()) return;
  PublishOutcome& outcome = batch_->outcomes[found->second];
  batch_->index_by_message.erase(found);
  if (ack != nullptr) {
    outcome.kind =
        ack->Duplicate ? PublishOutcome::Kind::kDuplicate : PublishOutcome::Kind::kStored;
    outcome.stream_seq = ack->Sequence;
  } else if (error != nullptr) {
    const bool permanent = is_permanent_jetstream_error(error->ErrCode);
    outcome.kind = permanent ? PublishOutcome::Kind::kPermanent : PublishOutcome::Kind::kTransient;
    outcome.error = error->ErrText != nullptr && error->ErrText[0] != '\0'
                        ? std::string(error->ErrText)
                        : status_text(error->Err);
    if (error->ErrCode != 0)
      outcome.error += " (JetStream error " + std::to_string(error->ErrCode) + ")";
    if (error->Err == NATS_NO_RESPONDERS) outcome.error = "no responders";
  }
  // The publisher waits for the last one only: waking it for every ack cost a context switch each.
  if (batch_->index_by_message.empty()) ack_arrived_.notify_all();
}

std::vector<PublishOutcome> JetStreamClient::publish(std::span<const OutgoingMessage> messages,
                                                     Duration ack_timeout) {
  std::lock_guard publishing(publish_mutex_);
  PendingBatch batch;
  batch.outcomes.resize(messages.size());
  batch.index_by_message.reserve(messages.size());
  if (!connected()) {
    for (auto& outcome : batch.outcomes)
      outcome.error = "not connected to NATS at " + settings_.url;
    return std::move(batch.outcomes);
  }
  {
    std::lock_guard lock(ack_mutex_);
    batch_ = &batch;
  }
  jsPubOptions publish_options;
  jsPubOptions_Init(&publish_options);
  publish_options.MaxWait = to_ms(ack_timeout);
  std::string subject_text;
  std::string name_text;
  std::string value_text;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const OutgoingMessage& message = messages[i];
    PublishOutcome& outcome = batch.outcomes[i];
    std::string problem = subject_problem(message.subject);
    if (problem.empty()) problem = header_problem(message.headers);
    if (!problem.empty()) {
      outcome = {PublishOutcome::Kind::kPermanent, problem, 0};
      continue;
    }
    natsMsg* msg = nullptr;
    // libnats takes C strings; these buffers keep their capacity from one message to the next.
    natsStatus status = natsMsg_Create(&msg, subject_text.assign(message.subject).c_str(), nullptr,
                                       message.data.data(), static_cast<int>(message.data.size()));
    if (status == NATS_OK)
      status = natsMsgHeader_Set(msg, kMsgIdHeader, value_text.assign(message.msg_id).c_str());
    for (const auto& [name, value] : message.headers) {
      if (status == NATS_OK)
        status = natsMsgHeader_Set(msg, name_text.assign(name).c_str(),
                                   value_text.assign(value).c_str());
    }
    const natsMsg* sent = msg;
    if (status == NATS_OK) {
      std::lock_guard lock(ack_mutex_);
      batch.index_by_message.emplace(sent, i);
    }
    if (status == NATS_OK) status = js_PublishMsgAsync(jetstream_, &msg, &publish_options);
    natsMsg_Destroy(msg);
    if (status != NATS_OK) {
      std::lock_guard lock(ack_mutex_);
      batch.index_by_message.erase(sent);
      outcome.kind = status == NATS_MAX_PAYLOAD ? PublishOutcome::Kind::kPermanent
                                                : PublishOutcome::Kind::kTransient;
      outcome.error = status == NATS_MAX_PAYLOAD ? "message larger than the server's max_payload"
                                                 : "publish: " + status_text(status);
    }
  }
  abandon_outstanding(batch, ack_timeout);
  classify_no_responders(messages, batch.outcomes);
  return std::move(batch.outcomes);
}

// Waits for the acknowledgements still due; what has not come by the deadline is taken back
// from libnats, so a late ack can never touch a finished batch.
void JetStreamClient::abandon_outstanding(PendingBatch& batch, Duration ack_timeout) {
  std::unique_lock lock(ack_mutex_);
  const auto deadline = std::chrono::steady_clock::now() + ack_timeout + std::chrono::seconds(1);
  ack_arrived_.wait_until(lock, deadline, [&] { return batch.index_by_message.empty(); });
  batch_ = nullptr;
  if (batch.index_by_message.empty()) return;
  lock.unlock();
  natsMsgList pending{};
  if (js_PublishAsyncGetPendingList(&pending, jetstream_) == NATS_OK) natsMsgList_Destroy(&pending);
  for (const auto& [message, index] : batch.index_by_message)
    batch.outcomes[index] = {
        PublishOutcome::Kind::kTransient,
        "no publish acknowledgement within " + std::to_string(ack_timeout.count()) + " ms", 0};
}

// JetStream answers "no responders" both while a stream leader is being elected and when no
// stream takes the subject at all; only the second is permanent, so ask which it is.
void JetStreamClient::classify_no_responders(std::span<const OutgoingMessage> messages,
                                             std::vector<PublishOutcome>& outcomes) {
  std::unordered_map<std::string, std::optional<bool>> has_stream;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].error != "no responders") continue;
    const std::string subject(messages[i].subject);
    auto found = has_stream.find(subject);
    if (found == has_stream.end())
      found = has_stream.emplace(subject, subject_has_stream(subject)).first;
    if (found->second == false) {
      outcomes[i].kind = PublishOutcome::Kind::kPermanent;
      outcomes[i].error = "no JetStream stream takes subject '" + subject + "'";
    } else {
      outcomes[i].error = "no responders for subject '" + subject + "' (stream unavailable)";
    }
  }
}

}  // namespace sluice::nats
