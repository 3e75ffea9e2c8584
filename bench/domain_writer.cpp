#include "domain_writer.hpp"

#include <stdexcept>

#include "workload.hpp"

namespace bench {

sluice::Handler DomainWriter::handler() {
  return [this](const sluice::Event& event, sluice::Context& context) { write(event, context); };
}

void DomainWriter::write(const sluice::Event& event, sluice::Context& context) {
  if (failures_.every > 0 && event.seq % failures_.every == 0 && context.attempt() == 1) {
    if (failures_.style == FailureStyle::kThrow)
      throw std::runtime_error("bench: transient failure");
    return context.retry("bench: transient failure");
  }
  SQLite::Database& db = context.db();
  if (prepared_on_ != &db) {
    insert_ = std::make_unique<SQLite::Statement>(db, kInsertDomainRow);
    prepared_on_ = &db;
  }
  // Not copied, as the floor binds them: the event outlives the statement's reset.
  insert_->bindNoCopy(1, event.id);
  insert_->bindNoCopy(2, event.payload);
  insert_->exec();
  insert_->reset();
  written_.fetch_add(1, std::memory_order_relaxed);
  if (mark_every_ > 0 && ++since_mark_ == mark_every_) {
    since_mark_ = 0;
    marks_.push_back(std::chrono::steady_clock::now());
  }
}

void DomainWriter::mark_every(long long every) {
  mark_every_ = every;
  since_mark_ = 0;
  marks_.assign(1, std::chrono::steady_clock::now());
}

}  // namespace bench
