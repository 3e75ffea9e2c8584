// The HOST:PORT of --listen options (`metrics --listen`, `console --listen`).
#pragma once

#include <string>
#include <utility>

namespace sluice::cli {

// {host, port} of "HOST:PORT" ("[::1]:80" gives "::1"; port 0 asks for a free port). Throws
// UsageError naming the address when it is malformed.
std::pair<std::string, int> split_host_port(const std::string& listen);

// True for a host only this machine can reach: localhost, 127.0.0.0/8 or ::1.
bool is_loopback_host(const std::string& host);

}  // namespace sluice::cli
