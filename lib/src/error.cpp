#include "sluice/error.hpp"

namespace sluice {

SchemaVersionError::SchemaVersionError(int file_version, int library_version)
    : Error("sluice: the file's schema version " + std::to_string(file_version) +
            " is newer than this library's " + std::to_string(library_version) +
            "; open it with a newer sluice"),
      file_version_(file_version),
      library_version_(library_version) {}

Throttled::Throttled(Duration delay, std::string reason)
    : Error("sluice: throttled for " + std::to_string(delay.count()) + " ms" +
            (reason.empty() ? std::string() : ": " + reason)),
      delay_(delay),
      reason_(std::move(reason)) {}

}  // namespace sluice
