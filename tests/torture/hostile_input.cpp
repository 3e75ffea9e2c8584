#include "hostile_input.hpp"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <memory>
#include <sluice/sluice.hpp>
#include <vector>

namespace sluice::torture {

namespace {

struct Target {
  SQLite::Database db = open_database(":memory:");
  Outbox outbox{db};

  long long events() { return db.execAndGet("SELECT count(*) FROM sluice_events").getInt64(); }
};

Target& target() {
  static Target t;
  return t;
}

std::vector<std::string> split_fields(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> fields(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0x1F) {
      fields.emplace_back();
    } else {
      fields.back().push_back(static_cast<char>(data[i]));
    }
  }
  return fields;
}

}  // namespace

std::string check_hostile_input(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string> f = split_fields(data, size);
  auto field = [&](std::size_t i) { return i < f.size() ? f[i] : std::string(); };
  NewEvent e;
  e.topic = field(1);
  if (f.size() > 2) e.payload = field(2);
  e.key = field(3);
  e.id = field(4);
  e.dedup_key = field(5);
  for (std::size_t i = 6; i + 1 < f.size(); i += 2) e.headers[f[i]] = f[i + 1];
  const char op = field(0).empty() ? 'e' : field(0)[0];

  Target& t = target();
  const long long before = t.events();
  try {
    EnqueueResult result;
    if (op == 'r') {
      result = t.outbox.receive(e);
    } else if (op == 'b') {
      SQLite::Transaction tx(t.db, SQLite::TransactionBehavior::IMMEDIATE);
      result = t.outbox.enqueue_batch({e, e}).front();
      tx.commit();
    } else {
      result = t.outbox.enqueue_now(e);
    }
    const long long after = t.events();
    if (!result.duplicate()) {
      if (after != before + 1 && op != 'b') return "stored result but the event count did not grow";
      SQLite::Statement stored(t.db, "SELECT topic FROM sluice_events WHERE id = ?");
      stored.bind(1, result.id);
      if (!stored.executeStep()) return "stored result names no stored event";
      if (stored.getColumn(0).getString() != e.topic) return "stored event has a different topic";
      if (!e.id.empty() && result.id != e.id) return "stored event has a different ID";
    } else if (op != 'b' && after != before) {
      return "duplicate result but an event was written";
    }
  } catch (const Error& error) {
    if (std::string(error.what()).empty()) return "sluice::Error with an empty message";
    if (t.events() != before) return std::string("refused but wrote: ") + error.what();
  } catch (const std::exception& error) {
    return std::string("non-sluice exception: ") + error.what();
  }
  return "";
}

}  // namespace sluice::torture
