#include "result.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace bench {
namespace {

std::string fixed(std::optional<double> value, int decimals) {
  if (!value) return "-";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, *value);
  return buffer;
}

std::string met_text(std::optional<bool> met) {
  if (!met) return "-";
  return *met ? "yes" : "NO";
}

std::string note_text(const Result& result) {
  std::vector<std::string> parts;
  if (result.rss_growth_mib) {
    parts.push_back("RSS +" + fixed(result.rss_growth_mib, 1) + " MiB, peak " +
                    fixed(result.peak_rss_mib, 1) + " MiB");
  }
  for (const auto& [name, value] : result.figures) {
    parts.push_back(name + " " + fixed(value, value == static_cast<long long>(value) ? 0 : 2));
  }
  if (!result.note.empty()) parts.push_back(result.note);
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

template <typename T>
nlohmann::json or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

void print_table(std::ostream& out, const std::vector<Result>& results) {
  char line[512];
  std::snprintf(line, sizeof line, "%-58s %9s %11s %11s %6s %8s %8s %8s  %-24s %-3s  %s\n", "case",
                "events", "events/s", "floor ev/s", "ratio", "p50 ms", "p99 ms", "max ms", "target",
                "met", "note");
  out << line;
  for (const Result& r : results) {
    std::optional<double> p50, p99, max;
    if (r.latency) {
      p50 = r.latency->p50_ms;
      p99 = r.latency->p99_ms;
      max = r.latency->max_ms;
    }
    std::snprintf(line, sizeof line, "%-58s %9lld %11s %11s %6s %8s %8s %8s  %-24s %-3s  %s\n",
                  r.name.c_str(), r.events, fixed(r.events_per_s, 0).c_str(),
                  fixed(r.floor_events_per_s, 0).c_str(), fixed(r.ratio, 2).c_str(),
                  fixed(p50, 2).c_str(), fixed(p99, 2).c_str(), fixed(max, 2).c_str(),
                  r.target.empty() ? "-" : r.target.c_str(), met_text(r.met).c_str(),
                  note_text(r).c_str());
    out << line;
  }
  out.flush();
}

void print_json(std::ostream& out, const std::vector<Result>& results) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Result& r : results) {
    nlohmann::json row = {
        {"case", r.name},
        {"events", r.events},
        {"events_per_s", or_null(r.events_per_s)},
        {"floor_events_per_s", or_null(r.floor_events_per_s)},
        {"ratio", or_null(r.ratio)},
        {"p50_ms", nullptr},
        {"p99_ms", nullptr},
        {"max_ms", nullptr},
        {"rss_growth_mib", or_null(r.rss_growth_mib)},
        {"peak_rss_mib", or_null(r.peak_rss_mib)},
        {"target", r.target.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.target)},
        {"met", or_null(r.met)},
        {"figures", nlohmann::json::object()},
        {"note", r.note}};
    for (const auto& [name, value] : r.figures) row["figures"][name] = value;
    if (r.latency) {
      row["p50_ms"] = r.latency->p50_ms;
      row["p99_ms"] = r.latency->p99_ms;
      row["max_ms"] = r.latency->max_ms;
    }
    rows.push_back(row);
  }
  out << rows.dump(2) << '\n';
}

}  // namespace bench
