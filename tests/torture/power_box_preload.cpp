// libsluice-power-box.so: loaded with LD_PRELOAD into a process the torture suite did not build
// (the `sluice` CLI), it makes the power-box VFS that process's default before main runs, so the
// process is part of a box whose power the suite cuts.
//   SLUICE_POWER_BOX   the box directory (nothing is done without it)
//   SLUICE_POWER_CUT   optional "N:clean" or "N:reordered": this process cuts at its N-th I/O
//   SLUICE_POWER_SEED  optional seed of the reordered tear
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "power_box_vfs.hpp"

namespace {

__attribute__((constructor)) void join_power_box() {
  using sluice::torture::BoxTear;
  using sluice::torture::PowerBoxVfs;
  const char* box = std::getenv("SLUICE_POWER_BOX");
  if (box == nullptr) return;
  try {
    const char* seed = std::getenv("SLUICE_POWER_SEED");
    // Never destroyed: the process's connections use it until the process ends.
    auto* vfs = new PowerBoxVfs(box, seed != nullptr ? std::stoull(seed) : 1);
    if (const char* cut = std::getenv("SLUICE_POWER_CUT")) {
      long long n = 0;
      BoxTear tear = BoxTear::kClean;
      PowerBoxVfs::parse_cut(cut, n, tear);
      vfs->cut_at_io(n, tear);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libsluice-power-box: %s\n", e.what());
    std::_Exit(125);
  }
}

}  // namespace
