// sluice_prune: deleting finished history, from C.
#include <string>

#include "database_handle.hpp"
#include "result_codes.hpp"
#include "sluice/error.hpp"
#include "sluice/retention.hpp"
#include "sluice/sluice.h"

extern "C" {

int sluice_prune(sluice_db* db, int64_t retention_ms, int flags, int64_t* pruned, char** errmsg) {
  using namespace sluice::c_api;
  return run(errmsg, [&] {
    sluice::c_api::DatabaseUse use(db, "sluice_prune");
    if ((flags & ~(SLUICE_PRUNE_FORCE | SLUICE_PRUNE_DRY_RUN)) != 0) {
      throw sluice::InvalidArgument("sluice_prune: unknown flags " + std::to_string(flags) +
                                    " (SLUICE_PRUNE_FORCE and SLUICE_PRUNE_DRY_RUN are known)");
    }
    sluice::PruneOptions options;
    options.force = (flags & SLUICE_PRUNE_FORCE) != 0;
    options.dry_run = (flags & SLUICE_PRUNE_DRY_RUN) != 0;
    const long long done = sluice::prune(use.db(), sluice::Duration(retention_ms), options);
    if (pruned != nullptr) *pruned = done;
  });
}

}  // extern "C"
