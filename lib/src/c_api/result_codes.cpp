#include "result_codes.hpp"

#include <SQLiteCpp/Exception.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "sluice/error.hpp"

namespace sluice::c_api {

char* copy_string(const std::string& text) noexcept {
  auto* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy != nullptr) std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

int fail(char** errmsg, int code, const char* message) noexcept {
  if (errmsg != nullptr) {
    const std::size_t size = std::strlen(message) + 1;
    *errmsg = static_cast<char*>(std::malloc(size));
    if (*errmsg != nullptr) std::memcpy(*errmsg, message, size);
  }
  return code;
}

int fail_current(char** errmsg) noexcept {
  // Most derived first: NotADatabaseError is a DatabaseError is an Error.
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return fail(errmsg, SLUICE_NOMEM, "sluice: out of memory");
  } catch (const InvalidArgument& e) {
    return fail(errmsg, SLUICE_INVALID, e.what());
  } catch (const NotFound& e) {
    return fail(errmsg, SLUICE_NOTFOUND, e.what());
  } catch (const TransactionError& e) {
    return fail(errmsg, SLUICE_TRANSACTION, e.what());
  } catch (const NotADatabaseError& e) {
    return fail(errmsg, SLUICE_NOTADB, e.what());
  } catch (const CorruptDatabaseError& e) {
    return fail(errmsg, SLUICE_CORRUPT, e.what());
  } catch (const StorageFullError& e) {
    return fail(errmsg, SLUICE_FULL, e.what());
  } catch (const DatabaseError& e) {
    return fail(errmsg, SLUICE_DATABASE, e.what());
  } catch (const SchemaVersionError& e) {
    return fail(errmsg, SLUICE_SCHEMA, e.what());
  } catch (const SQLite::Exception& e) {
    // The engine turns SQLite's errors into its own; should one slip through, it is one still.
    return fail(errmsg, SLUICE_DATABASE, e.what());
  } catch (const std::exception& e) {
    return fail(errmsg, SLUICE_ERROR, e.what());
  } catch (...) {
    return fail(errmsg, SLUICE_ERROR, "sluice: an unknown exception");
  }
}

}  // namespace sluice::c_api
