#include "exit_code.hpp"

#include <SQLiteCpp/Exception.h>

#include <algorithm>
#include <string>

#include "file_not_ready.hpp"
#include "printable.hpp"
#include "sluice/error.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

const char* const kExitCodesHelp =
    "Exit codes: 0 ok; 1 not found (file, event, consumer, dead letter) or check warnings;\n"
    "            2 usage or bad input (flags, JSON, time, duration); 3 database error\n"
    "            (not SQLite, corrupt, newer schema, locked, I/O); 4 check found problems;\n"
    "            5 not a sluice file (run init) or an older schema (run migrate).";

namespace {

int print(std::ostream& err, std::string message, int code) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  const std::string prefix = "sluice: ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  err << "sluice: " << printable(message) << '\n';
  return code;
}

}  // namespace

int report_error(std::exception_ptr error, std::ostream& err) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    return print(err, e.what(), kExitUsage);
  } catch (const FileNotReady& e) {
    return print(err, e.what(), kExitNotReady);
  } catch (const InvalidArgument& e) {
    return print(err, e.what(), kExitUsage);
  } catch (const NotFound& e) {
    return print(err, e.what(), kExitNotFound);
  } catch (const Error& e) {
    return print(err, e.what(), kExitDatabase);
  } catch (const SQLite::Exception& e) {
    return print(err, std::string("database error: ") + e.what(), kExitDatabase);
  } catch (const std::exception& e) {
    return print(err, std::string("unexpected error: ") + e.what(), kExitDatabase);
  }
}

}  // namespace sluice::cli
