// Exceptions turned into the C API's result codes and messages: nothing C++ throws crosses it.
#pragma once

#include <exception>
#include <string>

#include "sluice/error.hpp"
#include "sluice/sluice.h"

namespace sluice::c_api {

// Stores `message` in *errmsg (when errmsg is not null) as a string the caller frees with
// sluice_free, and returns `code`. Never throws: without memory for the copy *errmsg is NULL.
int fail(char** errmsg, int code, const char* message) noexcept;

// The result code and message for the exception in flight; call only inside a catch block.
int fail_current(char** errmsg) noexcept;

// Runs `body`, which returns nothing: SLUICE_OK and *errmsg NULL when it returns, else the code
// and message of what it threw.
template <class Body>
int run(char** errmsg, Body&& body) noexcept {
  if (errmsg != nullptr) *errmsg = nullptr;
  try {
    body();
    return SLUICE_OK;
  } catch (...) {
    return fail_current(errmsg);
  }
}

// Throws InvalidArgument with `message` when `pointer` is null.
template <class T>
void require(const T* pointer, const char* message) {
  if (pointer == nullptr) throw sluice::InvalidArgument(message);
}

// A copy of `text` in memory from malloc, for a caller that frees it with sluice_free; null
// without memory.
char* copy_string(const std::string& text) noexcept;

}  // namespace sluice::c_api
