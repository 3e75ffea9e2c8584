// `sluice enqueue`: add one event from a script or an operator's shell.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
#include "sluice/outbox.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

std::string read_payload_file(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw UsageError("cannot read payload file '" + path + "'");
  text << file.rdbuf();
  return text.str();
}

const char* status_name(EnqueueResult::Status status) {
  switch (status) {
    case EnqueueResult::Status::kStored:
      return "stored";
    case EnqueueResult::Status::kDuplicateId:
      return "duplicate_id";
    case EnqueueResult::Status::kDuplicateDedupKey:
      return "duplicate_dedup_key";
  }
  return "stored";
}

}  // namespace

void add_enqueue_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string topic;
    std::string payload;
    std::string payload_file;
    std::string key;
    std::string id;
    std::string dedup_key;
    int version = 1;
    std::string delay;
    std::vector<std::string> headers;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "enqueue", "Enqueue one event; prints its ID, or \"duplicate of ID\" if already there");
  command->footer(
      "Example:\n  sluice --db app.db enqueue --topic order.placed --payload '{\"order\":42}' "
      "--key order-42\n  jq -c . order.json | sluice --db app.db enqueue --topic order.placed "
      "--payload-file -");
  command->add_option("--topic", args->topic, "Routing name, e.g. order.placed")->required();
  auto* payload = command->add_option("--payload", args->payload, "A JSON document (default {})");
  auto* payload_file =
      command->add_option("--payload-file", args->payload_file, "Read the JSON from F (- = stdin)")
          ->type_name("F");
  payload->excludes(payload_file);
  command->add_option("--key", args->key, "Ordering key");
  command->add_option("--id", args->id, "The event ID (idempotency key); generated if absent");
  command->add_option("--dedup-key", args->dedup_key, "Domain dedup key, unique per topic");
  command->add_option("--version", args->version, "The payload's shape version (default 1)")
      ->type_name("N");
  command->add_option("--delay", args->delay, "Not delivered before this long from now (e.g. 15m)")
      ->type_name("DUR");
  command
      ->add_option("--header", args->headers,
                   "A header NAME=VALUE (repeatable, each NAME once; UTF-8)")
      ->type_name("NAME=VALUE");
  command->add_flag("--json", args->json, "Print {id, seq, status}");
  command->callback([session, args, payload, payload_file]() {
    NewEvent event;
    event.topic = args->topic;
    if (payload_file->count() > 0) {
      event.payload = read_payload_file(args->payload_file);
    } else if (payload->count() > 0) {
      event.payload = args->payload;
    }
    event.key = args->key;
    event.id = args->id;
    event.dedup_key = args->dedup_key;
    event.version = args->version;
    for (const std::string& header : args->headers) {
      const auto equals = header.find('=');
      if (equals == std::string::npos || equals == 0) {
        throw UsageError("invalid --header '" + header + "': expected NAME=VALUE");
      }
      // A second value for a name would replace the first without a word.
      if (!event.headers.emplace(header.substr(0, equals), header.substr(equals + 1)).second) {
        throw UsageError("invalid --header: header '" + header.substr(0, equals) + "' given twice");
      }
    }
    if (!args->delay.empty())
      event.not_before = system_clock()->now() + parse_duration(args->delay);
    SQLite::Database db = session->open();
    Outbox outbox(db, session->options());
    const EnqueueResult result = outbox.enqueue_now(event);
    if (args->json) {
      return print_json(
          std::cout,
          Json{{"id", result.id}, {"seq", result.seq}, {"status", status_name(result.status)}});
    }
    std::cout << (result.duplicate() ? "duplicate of " : "") << printable(result.id) << '\n';
  });
}

}  // namespace sluice::cli
