#include "lease_keeper.hpp"

#include <algorithm>

#include "log_to.hpp"
#include "rewind.hpp"
#include "saturating_time.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// Renewed three times per lease, a lease still holds after a renewal that waited for the write
// lock or failed once. Bounded below so that a zero lease cannot spin the thread, and above so
// that a "forever" lease cannot overflow a wait's deadline.
constexpr Duration kShortestPeriod = std::chrono::milliseconds(10);
constexpr Duration kLongestPeriod = std::chrono::hours(24);

}  // namespace

LeaseKeeper::LeaseKeeper(std::string path, std::string owner, const Options& options)
    : path_(std::move(path)),
      owner_(std::move(owner)),
      options_(options),
      period_(std::clamp<Duration>(options.claim_lease / 3, kShortestPeriod, kLongestPeriod)) {}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::hold(bool holding) {
  std::lock_guard lock(mutex_);
  if (holding == holding_) return;
  holding_ = holding;
  if (!holding) return;
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  wake_.notify_all();
}

void LeaseKeeper::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || holding_; });
    if (wake_.wait_for(lock, period_, [this] { return stopping_; })) break;
    if (!holding_) continue;
    lock.unlock();
    renew();
    lock.lock();
  }
  renew_.reset();
  db_.reset();
}

void LeaseKeeper::renew() {
  try {
    if (!db_) {
      db_.emplace(path_, SQLite::OPEN_READWRITE);
      // Waiting longer than a period would let the lease run down while renewals queue up.
      db_->setBusyTimeout(static_cast<int>(std::min(options_.busy_timeout, period_).count()));
      // A renewal lost to a power loss does not matter: no process outlives its boot, and the
      // claims of an earlier boot are taken over at once.
      db_->exec("PRAGMA synchronous = NORMAL");
      renew_ = std::make_unique<SQLite::Statement>(
          *db_, "UPDATE sluice_claims SET lease_until = ?2 WHERE owner = ?1");
    }
    const TimePoint now = (options_.clock ? options_.clock : system_clock())->now();
    WriteTransaction tx(*db_);
    rewind(*renew_);
    renew_->bindNoCopy(1, owner_);
    renew_->bind(2, static_cast<int64_t>(to_millis(add_saturating(now, options_.claim_lease))));
    renew_->exec();
    tx.commit();
  } catch (const std::exception& e) {
    renew_.reset();
    db_.reset();  // opened anew by the next renewal
    log_to(options_, LogLevel::kWarn, "could not renew the lease of claims",
           {{"owner", owner_}, {"error", e.what()}});
  }
}

}  // namespace sluice
