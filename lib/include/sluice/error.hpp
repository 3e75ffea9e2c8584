// Errors raised by sluice. Every exception sluice throws derives from sluice::Error.
// Expected outcomes (a duplicate enqueue, an already-seen event) are return values, not errors.
#pragma once

#include <stdexcept>
#include <string>

#include "sluice/clock.hpp"

namespace sluice {

// Base of every sluice exception; what() names the operation and what was wrong.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller passed something sluice refuses: malformed JSON, an oversized payload, an empty
// topic, an option out of range, a bad filter. Nothing was written.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// An event, consumer or dead letter named by the caller does not exist.
class NotFound : public Error {
 public:
  using Error::Error;
};

// A transaction rule was broken: enqueue without an open transaction, schema work inside the
// caller's transaction, a handler that commits or rolls back sluice's transaction itself.
class TransactionError : public Error {
 public:
  using Error::Error;
};

// SQLite reported an error; code() is SQLite's extended result code.
class DatabaseError : public Error {
 public:
  DatabaseError(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// The file is not an SQLite database (SQLITE_NOTADB).
class NotADatabaseError : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};

// The file is an SQLite database but damaged (SQLITE_CORRUPT).
class CorruptDatabaseError : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};

// The disk or quota is full (SQLITE_FULL). The worker backs off on it without spending attempts.
class StorageFullError : public DatabaseError {
 public:
  using DatabaseError::DatabaseError;
};

// The file's sluice schema is newer than this library understands.
class SchemaVersionError : public Error {
 public:
  SchemaVersionError(int file_version, int library_version);
  int file_version() const { return file_version_; }
  int library_version() const { return library_version_; }

 private:
  int file_version_;
  int library_version_;
};

// Thrown by a handler to say the event can never succeed: it is dead-lettered at once with
// reason "permanent", without further attempts.
class PermanentError : public Error {
 public:
  using Error::Error;
};

// Thrown by a handler to say its downstream is throttling it or is down: the event goes back to
// pending without spending an attempt, and the whole consumer pauses for `delay` in every process
// (see Context::throttle). `reason` is shown as the pause's note.
class Throttled : public Error {
 public:
  explicit Throttled(Duration delay, std::string reason = {});
  Duration delay() const { return delay_; }
  const std::string& reason() const { return reason_; }

 private:
  Duration delay_;
  std::string reason_;
};

}  // namespace sluice
