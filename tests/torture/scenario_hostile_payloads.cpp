// Scenario 11: the hostile-input corpus replayed, plus seeded mutations of it, through the same
// check the libFuzzer target runs.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "hostile_input.hpp"
#include "scenario.hpp"

namespace sluice::torture {

namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string mutate(std::string input, std::mt19937_64& rng) {
  static const std::string kNasty[] = {"\"",
                                       "{",
                                       "}",
                                       "[",
                                       "\\",
                                       std::string(1, '\0'),
                                       "\xff",
                                       "\xc3\x28",
                                       "\x1f",
                                       "1e999999",
                                       "\"\\ud800\"",
                                       std::string(5000, '['),
                                       std::string(70000, 'a')};
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < edits; ++i) {
    const std::size_t at = input.empty() ? 0 : rng() % (input.size() + 1);
    switch (rng() % 4) {
      case 0:
        if (!input.empty() && at < input.size()) input[at] = static_cast<char>(rng());
        break;
      case 1:
        input.insert(at, kNasty[rng() % std::size(kNasty)]);
        break;
      case 2:
        if (at < input.size()) input.erase(at, 1 + rng() % 8);
        break;
      default:
        input += input.substr(0, std::min<std::size_t>(input.size(), 64));
    }
  }
  return input;
}

}  // namespace

ScenarioResult run_hostile_payloads(const SuiteConfig& config) {
  ScenarioResult result("11 hostile payloads");
  std::vector<std::string> corpus;
  for (const auto& entry : std::filesystem::directory_iterator(config.corpus_dir)) {
    if (entry.is_regular_file()) corpus.push_back(read_all(entry.path()));
  }
  if (corpus.empty()) {
    result.fail("no corpus in " + config.corpus_dir);
    return result;
  }
  auto feed = [&](const std::string& input) {
    const std::string problem =
        check_hostile_input(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    ++result.runs;
    if (!problem.empty()) result.fail(problem);
  };
  for (const std::string& input : corpus) feed(input);
  std::mt19937_64 rng(config.seed * 137);
  for (long long i = 0; i < config.count(300, 20000); ++i)
    feed(mutate(corpus[rng() % corpus.size()], rng));
  result.notes = std::to_string(corpus.size()) + " corpus files + mutations";
  return result;
}

}  // namespace sluice::torture
