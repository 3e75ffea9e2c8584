#include "listen_address.hpp"

#include <arpa/inet.h>

#include "usage_error.hpp"

namespace sluice::cli {

std::pair<std::string, int> split_host_port(const std::string& listen) {
  const auto colon = listen.rfind(':');
  const auto bad = [&listen]() {
    return UsageError("invalid listen address '" + listen +
                      "': expected HOST:PORT, e.g. 127.0.0.1:9464");
  };
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) throw bad();
  const std::string port_text = listen.substr(colon + 1);
  if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos) {
    throw bad();
  }
  const int port = std::stoi(port_text);
  if (port > 65535) throw bad();
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, port};
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace sluice::cli
