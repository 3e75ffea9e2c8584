// Writing a record to Options::log, which is optional: sluice is silent when it is unset.
#pragma once

#include <string>

#include "sluice/options.hpp"

namespace sluice {

inline void log_to(const Options& options, LogLevel level, const std::string& message,
                   const LogFields& fields) {
  if (options.log) options.log->write(level, message, fields);
}

}  // namespace sluice
