// W3C Trace Context (https://www.w3.org/TR/trace-context/) carried in an event's headers:
// "traceparent" and "tracestate", so that the C API, SQL, the CLI and the NATS relay carry it
// as they carry any header.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sluice/event.hpp"
#include "sluice/options.hpp"

namespace sluice {

inline constexpr const char* kTraceparentHeader = "traceparent";
inline constexpr const char* kTracestateHeader = "tracestate";

// What is wrong with `value` as a traceparent, or "" when it is one.
std::string traceparent_problem(std::string_view value);
// What is wrong with `value` as a tracestate, or "" when it is one.
std::string tracestate_problem(std::string_view value);

// Throws InvalidArgument naming what is wrong with the trace context `event` carries, in its
// fields or its headers: malformed, given in both and different, or a tracestate without one.
void validate_trace_context(const NewEvent& event);

// The headers to store for `event`: its headers, with its trace_context and trace_state as the
// "traceparent" and "tracestate" headers when set. Returns event.headers itself when there is
// nothing to add, else `scratch` filled.
const Headers& stored_headers(const NewEvent& event, Headers& scratch);

// `event` with Options::current_trace_context's answer as its trace context, when the event
// gives none and the hook gives a valid one (a malformed one is logged and dropped); nullopt
// when nothing changes, which spares a copy of the event.
std::optional<NewEvent> with_current_trace(const NewEvent& event, const Options& options);

// The 32 hex digits of the trace ID of a valid traceparent; "" for anything else.
std::string trace_id_of(std::string_view traceparent);

}  // namespace sluice
