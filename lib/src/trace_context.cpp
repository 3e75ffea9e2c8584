#include "trace_context.hpp"

#include <set>

#include "log_to.hpp"
#include "sluice/error.hpp"

namespace sluice {
namespace {

constexpr std::size_t kMaxTracestateMembers = 32;
constexpr std::size_t kMaxTracestateBytes = 512;

bool lower_hex(std::string_view text) {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool all_zero(std::string_view text) { return text.find_first_not_of('0') == std::string::npos; }

bool lower_alpha(char c) { return c >= 'a' && c <= 'z'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool key_char(char c) {
  return lower_alpha(c) || digit(c) || c == '_' || c == '-' || c == '*' || c == '/';
}

// A tracestate key: `simple-key` or `tenant-id@system-id`.
bool valid_key(std::string_view key) {
  const std::size_t at = key.find('@');
  const auto run_ok = [](std::string_view run, std::size_t max, bool digit_first) {
    if (run.empty() || run.size() > max) return false;
    if (!(lower_alpha(run[0]) || (digit_first && digit(run[0])))) return false;
    for (const char c : run) {
      if (!key_char(c)) return false;
    }
    return true;
  };
  if (at == std::string_view::npos) return run_ok(key, 256, false);
  return run_ok(key.substr(0, at), 241, true) && run_ok(key.substr(at + 1), 14, false);
}

// A tracestate value: printable ASCII but ',' and '=', not ending in a space.
bool valid_value(std::string_view value) {
  if (value.empty() || value.size() > 256 || value.back() == ' ') return false;
  for (const char c : value) {
    if (c < 0x20 || c > 0x7e || c == ',' || c == '=') return false;
  }
  return true;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

const std::string* header(const Headers& headers, const char* name) {
  const auto found = headers.find(name);
  return found == headers.end() ? nullptr : &found->second;
}

[[noreturn]] void refuse(const NewEvent& event, const std::string& what) {
  throw InvalidArgument("sluice: enqueue: the trace context of a '" + event.topic +
                        "' event: " + what);
}

}  // namespace

std::string traceparent_problem(std::string_view value) {
  // version "-" trace-id "-" parent-id "-" trace-flags: 2, 32, 16 and 2 lowercase hex digits.
  if (value.size() < 55)
    return "a traceparent has 55 characters, this one " + std::to_string(value.size());
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') {
    return "a traceparent is version-traceid-parentid-flags, separated by '-'";
  }
  const std::string_view version = value.substr(0, 2);
  if (!lower_hex(version) || version == "ff")
    return "the version is not 2 lowercase hex digits below ff";
  if (version == "00" && value.size() != 55)
    return "a version 00 traceparent has exactly 55 characters";
  if (value.size() > 55 && value[55] != '-')
    return "a later version's traceparent goes on after a '-'";
  const std::string_view trace_id = value.substr(3, 32);
  const std::string_view parent_id = value.substr(36, 16);
  if (!lower_hex(trace_id) || all_zero(trace_id)) {
    return "the trace ID is not 32 lowercase hex digits, not all zero";
  }
  if (!lower_hex(parent_id) || all_zero(parent_id)) {
    return "the parent ID is not 16 lowercase hex digits, not all zero";
  }
  if (!lower_hex(value.substr(53, 2))) return "the flags are not 2 lowercase hex digits";
  return {};
}

std::string tracestate_problem(std::string_view value) {
  if (value.size() > kMaxTracestateBytes) {
    return "a tracestate has at most " + std::to_string(kMaxTracestateBytes) + " bytes, this one " +
           std::to_string(value.size());
  }
  std::set<std::string_view> keys;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    const std::string_view member = trimmed(value.substr(start, comma - start));
    start = comma + 1;
    if (member.empty()) continue;  // empty list members are allowed
    const std::size_t equals = member.find('=');
    if (equals == std::string_view::npos)
      return "tracestate member '" + std::string(member) + "' has no '='";
    const std::string_view key = member.substr(0, equals);
    if (!valid_key(key)) return "tracestate key '" + std::string(key) + "' is not a valid key";
    if (!valid_value(member.substr(equals + 1))) {
      return "the value of tracestate key '" + std::string(key) + "' is not a valid value";
    }
    if (!keys.insert(key).second) return "tracestate key '" + std::string(key) + "' appears twice";
    if (keys.size() > kMaxTracestateMembers) {
      return "a tracestate has at most " + std::to_string(kMaxTracestateMembers) + " members";
    }
  }
  return {};
}

void validate_trace_context(const NewEvent& event) {
  const std::string* parent_header = header(event.headers, kTraceparentHeader);
  const std::string* state_header = header(event.headers, kTracestateHeader);
  if (!event.trace_context.empty()) {
    if (const std::string problem = traceparent_problem(event.trace_context); !problem.empty()) {
      refuse(event, "trace_context '" + event.trace_context + "': " + problem);
    }
    if (parent_header != nullptr && *parent_header != event.trace_context) {
      refuse(event, "trace_context and the traceparent header differ; give it once");
    }
  }
  if (parent_header != nullptr) {
    if (const std::string problem = traceparent_problem(*parent_header); !problem.empty()) {
      refuse(event, "the traceparent header '" + *parent_header + "': " + problem);
    }
  }
  if (!event.trace_state.empty()) {
    if (const std::string problem = tracestate_problem(event.trace_state); !problem.empty()) {
      refuse(event, "trace_state: " + problem);
    }
    if (state_header != nullptr && *state_header != event.trace_state) {
      refuse(event, "trace_state and the tracestate header differ; give it once");
    }
  }
  if (state_header != nullptr) {
    if (const std::string problem = tracestate_problem(*state_header); !problem.empty()) {
      refuse(event, "the tracestate header: " + problem);
    }
  }
  const bool has_parent = !event.trace_context.empty() || parent_header != nullptr;
  const bool has_state = !event.trace_state.empty() || state_header != nullptr;
  if (has_state && !has_parent) refuse(event, "a tracestate needs a traceparent");
}

const Headers& stored_headers(const NewEvent& event, Headers& scratch) {
  if (event.trace_context.empty() && event.trace_state.empty()) return event.headers;
  scratch = event.headers;
  if (!event.trace_context.empty()) scratch[kTraceparentHeader] = event.trace_context;
  if (!event.trace_state.empty()) scratch[kTracestateHeader] = event.trace_state;
  return scratch;
}

std::optional<NewEvent> with_current_trace(const NewEvent& event, const Options& options) {
  if (!options.current_trace_context || !event.trace_context.empty() ||
      event.headers.count(kTraceparentHeader) > 0) {
    return std::nullopt;
  }
  const std::optional<std::string> current = options.current_trace_context();
  if (!current || current->empty()) return std::nullopt;
  if (const std::string problem = traceparent_problem(*current); !problem.empty()) {
    log_to(options, LogLevel::kWarn, "current trace context dropped",
           {{"topic", event.topic}, {"traceparent", *current}, {"problem", problem}});
    return std::nullopt;
  }
  NewEvent traced = event;
  traced.trace_context = *current;
  return traced;
}

std::string trace_id_of(std::string_view traceparent) {
  if (!traceparent_problem(traceparent).empty()) return {};
  return std::string(traceparent.substr(3, 32));
}

std::optional<std::string> Event::trace_context() const {
  const auto found = headers.find(kTraceparentHeader);
  if (found == headers.end()) return std::nullopt;
  return found->second;
}

std::optional<std::string> Event::trace_state() const {
  const auto found = headers.find(kTracestateHeader);
  if (found == headers.end()) return std::nullopt;
  return found->second;
}

}  // namespace sluice
