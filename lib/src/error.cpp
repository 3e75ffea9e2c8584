#include "sluice/error.hpp"

namespace sluice {

SchemaVersionError::SchemaVersionError(int file_version, int library_version)
    : Error("sluice: the file's schema version " + std::to_string(file_version) +
            " is newer than this library's " + std::to_string(library_version) +
            "; open it with a newer sluice"),
      file_version_(file_version),
      library_version_(library_version) {}

}  // namespace sluice
