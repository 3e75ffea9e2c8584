// The ledger and the applied check: each count of the check catches the fault it names.
#include <SQLiteCpp/Database.h>
#include <doctest/doctest.h>

#include <fstream>

#include "applied_check.hpp"
#include "ledger.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {
namespace {

TEST_CASE("ledger reads back complete lines in append order and ignores a torn tail") {
  TempDir dir;
  const std::string path = dir.file("ledger");
  {
    Ledger ledger(path, true);
    ledger.append("a");
    ledger.append("b");
  }
  std::ofstream(path, std::ios::app) << "c-torn";
  CHECK(Ledger::read(path) == std::vector<std::string>{"a", "b"});
  CHECK(Ledger::read(dir.file("missing")).empty());
}

struct Fixture {
  TempDir dir;
  SQLite::Database db{dir.file("check.db"), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE};
  Fixture() { db.exec(kAppliedTableSql); }
  void apply(const std::string& consumer, const std::string& id, long long seq,
             const std::string& key = "") {
    db.exec("INSERT INTO torture_applied(consumer, event_id, seq, key) VALUES ('" + consumer +
            "', '" + id + "', " + std::to_string(seq) + ", '" + key + "')");
  }
};

TEST_CASE("applied check passes when every consumer applied every acked event once") {
  Fixture f;
  f.apply("c1", "e1", 1, "k");
  f.apply("c1", "e2", 2, "k");
  f.apply("c2", "e2", 2, "k");
  f.apply("c2", "e1", 1, "k");
  f.apply("c2", "e3", 3, "k");  // committed but the producer died before its ledger write
  const auto check = check_applied(f.db, {"e1", "e2"}, {"e1", "e2", "e3"}, {"c1", "c2"}, {"c1"});
  CHECK(check.events == 2);
  CHECK(check.pass());
}

TEST_CASE("applied check counts lost, double-applied, unexpected and inverted rows") {
  Fixture f;
  f.apply("c1", "e2", 2, "k");
  f.apply("c1", "e1", 1, "k");  // inversion within key k
  f.apply("c1", "e1", 1, "k");  // double
  f.apply("c1", "zz", 9, "");   // never intended
  const auto check = check_applied(f.db, {"e1", "e2", "e3"}, {"e1", "e2", "e3"}, {"c1"}, {"c1"});
  CHECK(check.lost == 1);
  CHECK(check.double_applied == 1);
  CHECK(check.unexpected == 1);
  CHECK(check.inversions == 2);
  CHECK(check.integrity == "ok");
  CHECK_FALSE(check.pass());
}

}  // namespace
}  // namespace sluice::torture
