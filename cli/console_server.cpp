#include "console_server.hpp"

#include <httplib.h>

#include <random>

#include "console_api.hpp"
#include "console_assets.hpp"
#include "console_history.hpp"
#include "file_not_ready.hpp"
#include "http_server.hpp"
#include "listen_address.hpp"
#include "sluice/error.hpp"
#include "sluice/stats.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

constexpr const char* kJson = "application/json; charset=utf-8";
constexpr const char* kTokenCookie = "sluice_console_token";
// A POST body larger than this is no request the page makes.
constexpr std::size_t kMaxBody = 1 << 20;

std::string random_token() {
  std::random_device device;  // /dev/urandom
  static const char* const kHex = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i) token += kHex[device() % 16];
  return token;
}

// Compares in time independent of where the texts differ, so a token cannot be guessed byte by
// byte from the answers' timing.
bool same_secret(const std::string& given, const std::string& secret) {
  unsigned char difference = given.size() == secret.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) {
    difference |= static_cast<unsigned char>(given[i] ^ secret[i % secret.size()]);
  }
  return difference == 0;
}

void send_json(httplib::Response& response, int status, const Json& document) {
  response.status = status;
  response.set_header("Cache-Control", "no-store");
  response.set_content(json_text(document), kJson);
}

void send_error(httplib::Response& response, int status, const std::string& message) {
  send_json(response, status, Json{{"error", message}});
}

// The host part of a Host header ("127.0.0.1:8080", "[::1]:8080", "localhost").
std::string host_name(const std::string& host_header) {
  if (!host_header.empty() && host_header.front() == '[') {
    const auto close = host_header.find(']');
    return close == std::string::npos ? host_header : host_header.substr(1, close - 1);
  }
  return host_header.substr(0, host_header.rfind(':'));
}

// The value of cookie `name` in the request's Cookie headers, empty when none.
std::string cookie(const httplib::Request& request, const std::string& name) {
  const std::string header = request.get_header_value("Cookie");
  std::size_t start = 0;
  while (start < header.size()) {
    const std::size_t end = std::min(header.find(';', start), header.size());
    std::string pair = header.substr(start, end - start);
    pair.erase(0, pair.find_first_not_of(' '));
    if (pair.rfind(name + "=", 0) == 0) return pair.substr(name.size() + 1);
    start = end + 1;
  }
  return "";
}

// Runs `answer` and sends what it returns, or the error it throws as {"error": ...} with the
// status that says whose fault it was.
template <typename Answer>
void respond(httplib::Response& response, Answer&& answer) {
  try {
    send_json(response, 200, answer());
  } catch (const ApiError& e) {
    send_error(response, e.status(), e.what());
  } catch (const NotFound& e) {
    send_error(response, 404, e.what());
  } catch (const InvalidArgument& e) {
    send_error(response, 400, e.what());
  } catch (const UsageError& e) {
    send_error(response, 400, e.what());
  } catch (const FileNotReady& e) {
    send_error(response, 503, e.what());
  } catch (const Error& e) {
    send_error(response, 503, e.what());
  } catch (const std::exception& e) {
    send_error(response, 500, e.what());
  }
}

Json parse_body(const httplib::Request& request) {
  Json body = Json::parse(request.body, nullptr, false);
  if (body.is_discarded()) {
    throw ApiError(400,
                   "the request body is not JSON (expected an object, e.g. {\"dry_run\": "
                   "true})");
  }
  return body;
}

ApiParams params_of(const httplib::Request& request) {
  return ApiParams(request.params.begin(), request.params.end());
}

}  // namespace

ConsoleServer::ConsoleServer(Session session, ConsoleOptions options)
    : options_(std::move(options)), csrf_token_(random_token()) {
  const std::string host = split_host_port(options_.listen).first;
  if (!is_loopback_host(host) && options_.token.empty()) {
    throw UsageError("refusing to listen on " + options_.listen +
                     " without --token: off loopback anyone who reaches the port could "
                     "replay and discard; pass --token TOKEN (or SLUICE_CONSOLE_TOKEN)");
  }
  session.open_read_only();  // refuses a missing, foreign or older file before listening
  api_ = std::make_unique<ConsoleApi>(session, options_.read_only);
  history_ = std::make_unique<ConsoleHistory>(
      [session] {
        SQLite::Database db = session.open_read_only();
        return consumer_stats(db, session.options());
      },
      options_.sample_interval, options_.history);
  server_ = std::make_unique<HttpServer>();
  server_->routes().set_payload_max_length(kMaxBody);
  add_routes(server_->routes());
  const int bound_port = server_->listen(options_.listen);
  const std::string url_host = host.find(':') == std::string::npos ? host : "[" + host + "]";
  url_ = "http://" + url_host + ":" + std::to_string(bound_port) + "/";
}

ConsoleServer::~ConsoleServer() {
  api_->stop();
  server_.reset();
}

void ConsoleServer::add_routes(httplib::Server& server) {
  // Who may ask, before any route runs.
  server.set_pre_routing_handler([this](const httplib::Request& request,
                                        httplib::Response& response) {
    using httplib::Server;
    response.set_header("X-Content-Type-Options", "nosniff");
    response.set_header("X-Frame-Options", "DENY");
    response.set_header("Referrer-Policy", "no-referrer");
    const std::string host = request.get_header_value("Host");
    // Without a token the console trusts whoever reaches loopback, so a page elsewhere must not
    // reach it by pointing its own name at 127.0.0.1 (DNS rebinding): only loopback names.
    if (options_.token.empty() && !is_loopback_host(host_name(host))) {
      send_error(response, 403,
                 "Host '" + host +
                     "' refused: without --token the console answers only to "
                     "loopback names (localhost, 127.0.0.1, [::1])");
      return Server::HandlerResponse::Handled;
    }
    if (!options_.token.empty()) {
      const std::string bearer = request.get_header_value("Authorization");
      const bool by_header =
          bearer.rfind("Bearer ", 0) == 0 && same_secret(bearer.substr(7), options_.token);
      const bool by_cookie = same_secret(cookie(request, kTokenCookie), options_.token);
      const bool by_param = request.method == "GET" && request.has_param("token") &&
                            same_secret(request.get_param_value("token"), options_.token);
      if (!by_header && !by_cookie && !by_param) {
        response.set_header("WWW-Authenticate", "Bearer");
        send_error(response, 401,
                   "this console needs its token: \"Authorization: Bearer TOKEN\", or open "
                   "the page once with ?token=TOKEN");
        return Server::HandlerResponse::Handled;
      }
      if (by_param) {
        response.set_header("Set-Cookie", std::string(kTokenCookie) + "=" + options_.token +
                                              "; Path=/; HttpOnly; SameSite=Strict");
      }
    }
    if (request.method == "POST") {
      if (options_.read_only) {
        send_error(response, 403,
                   "the console is read-only (--read-only): no replay, discard, backfill, "
                   "prune, pause or resume");
        return Server::HandlerResponse::Handled;
      }
      if (request.has_header("Origin") && request.get_header_value("Origin") != "http://" + host) {
        send_error(response, 403,
                   "Origin '" + request.get_header_value("Origin") +
                       "' refused: actions are taken only from the console's own page (http://" +
                       host + ")");
        return Server::HandlerResponse::Handled;
      }
      if (!same_secret(request.get_header_value("X-CSRF-Token"), csrf_token_)) {
        send_error(response, 403,
                   "missing or wrong X-CSRF-Token header: take csrf_token from GET /api/session");
        return Server::HandlerResponse::Handled;
      }
    }
    return Server::HandlerResponse::Unhandled;
  });

  for (const ConsoleAsset& asset : console_assets()) {
    const auto serve = [&asset](const httplib::Request&, httplib::Response& response) {
      response.set_header("Cache-Control", "no-cache");
      response.set_header("Content-Security-Policy",
                          "default-src 'self'; script-src 'self'; style-src 'self' "
                          "'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'");
      response.set_content(asset.bytes.data(), asset.bytes.size(), asset.content_type);
    };
    server.Get(asset.path, serve);
    if (std::string(asset.path) == "/index.html") server.Get("/", serve);
  }

  server.Get("/api/session", [this](const httplib::Request&, httplib::Response& response) {
    send_json(response, 200, Json{{"csrf_token", csrf_token_}, {"read_only", options_.read_only}});
  });
  server.Get("/api/overview", [this](const httplib::Request&, httplib::Response& response) {
    respond(response, [&] { return api_->overview(); });
  });
  server.Get("/api/workers", [this](const httplib::Request&, httplib::Response& response) {
    respond(response, [&] { return api_->workers(); });
  });
  server.Get("/api/history", [this](const httplib::Request&, httplib::Response& response) {
    respond(response, [&] { return history_->samples_json(); });
  });
  server.Get("/api/events", [this](const httplib::Request& request, httplib::Response& response) {
    respond(response, [&] { return api_->events(params_of(request)); });
  });
  // httplib matches the decoded path, so an ID with a '/' (sent as %2F) takes the rest of it.
  server.Get("/api/events/(.+)",
             [this](const httplib::Request& request, httplib::Response& response) {
               respond(response, [&] { return api_->event(request.matches[1].str()); });
             });
  server.Get("/api/dead-letters",
             [this](const httplib::Request& request, httplib::Response& response) {
               respond(response, [&] { return api_->dead_letters(params_of(request)); });
             });
  server.Get("/api/audit", [this](const httplib::Request& request, httplib::Response& response) {
    respond(response, [&] { return api_->audit(params_of(request)); });
  });
  server.Post("/api/dead-letters/replay",
              [this](const httplib::Request& request, httplib::Response& response) {
                respond(response, [&] { return api_->replay(parse_body(request)); });
              });
  server.Post("/api/dead-letters/discard",
              [this](const httplib::Request& request, httplib::Response& response) {
                respond(response, [&] { return api_->discard(parse_body(request)); });
              });
  server.Post("/api/backfill",
              [this](const httplib::Request& request, httplib::Response& response) {
                respond(response, [&] { return api_->backfill(parse_body(request)); });
              });
  server.Post("/api/consumers/pause",
              [this](const httplib::Request& request, httplib::Response& response) {
                respond(response, [&] { return api_->pause(parse_body(request)); });
              });
  server.Post("/api/consumers/resume",
              [this](const httplib::Request& request, httplib::Response& response) {
                respond(response, [&] { return api_->resume(parse_body(request)); });
              });
  server.Post("/api/prune", [this](const httplib::Request& request, httplib::Response& response) {
    respond(response, [&] { return api_->prune(parse_body(request)); });
  });

  // The actions answer a GET (a link followed, a prefetch) with 405, changing nothing.
  for (const char* path : {"/api/dead-letters/replay", "/api/dead-letters/discard", "/api/backfill",
                           "/api/prune", "/api/consumers/pause", "/api/consumers/resume"}) {
    server.Get(path, [path](const httplib::Request&, httplib::Response& response) {
      response.set_header("Allow", "POST");
      send_error(response, 405, std::string(path) + " changes the file: use POST");
    });
  }

  // A path no route takes, or a method a path does not take: a JSON answer naming it.
  // httplib calls it for every 4xx and 5xx; the API's own errors have their body already.
  server.set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return;
    if (response.status == 404) {
      send_error(response, 404, "no such page or API call: " + request.method + " " + request.path);
    } else if (response.status == 413) {
      send_error(response, 413, "request body too large");
    }
  });
}

}  // namespace sluice::cli
