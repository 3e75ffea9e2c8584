// The console's page (cli/console/assets), compiled into the binary by scripts/embed_assets.py:
// no CDN, no files beside the binary, so the console works offline and from any directory.
#pragma once

#include <string_view>
#include <vector>

namespace sluice::cli {

struct ConsoleAsset {
  // "/index.html", "/app.js", ...
  const char* path;
  const char* content_type;
  std::string_view bytes;
};

// Every file of cli/console/assets, by path. Immutable; safe to read from any thread.
const std::vector<ConsoleAsset>& console_assets();

}  // namespace sluice::cli
