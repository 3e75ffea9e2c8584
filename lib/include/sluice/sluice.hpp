// Umbrella header: everything an app needs from sluice.
#pragma once

// The SQLiteCpp classes an app uses beside sluice: its connection, statements, transactions.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include "sluice/audit.hpp"
#include "sluice/backfill.hpp"
#include "sluice/clock.hpp"
#include "sluice/consumer.hpp"
#include "sluice/consumer_removal.hpp"
#include "sluice/database.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/event.hpp"
#include "sluice/inspect.hpp"
#include "sluice/log.hpp"
#include "sluice/options.hpp"
#include "sluice/outbox.hpp"
#include "sluice/pause.hpp"
#include "sluice/retention.hpp"
#include "sluice/retry_policy.hpp"
#include "sluice/stats.hpp"
#include "sluice/tracer.hpp"
#include "sluice/worker.hpp"
#include "sluice/workers.hpp"
