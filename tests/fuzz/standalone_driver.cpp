// The fuzz targets' main() in a build without libFuzzer (gcc, `make test`): replays the seed
// corpus, then runs a fixed number of mutations of it drawn from a seeded PRNG, so a run is the
// same every time and a failure can be replayed. ASan and UBSan find what libFuzzer's run would;
// only the coverage-guided search is missing, which `make fuzz` (scripts/fuzz) adds.
//
//   fuzz_<target> [--runs N] [--seed S] [--max-len BYTES] PATH...
// PATH is a corpus directory (every file in it, in name order) or a single input file.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

using Input = std::vector<std::uint8_t>;

// The input being run, written out if a sanitizer ends the process on it.
const Input* current = nullptr;

void save_current_input() {
  if (current == nullptr) return;
  const char* path = "fuzz-crash-input";
  if (std::FILE* out = std::fopen(path, "wb")) {
    std::fwrite(current->data(), 1, current->size(), out);
    std::fclose(out);
    std::fprintf(stderr, "fuzz driver: the failing input is in %s/%s (%zu bytes)\n",
                 std::filesystem::current_path().c_str(), path, current->size());
  }
}

// A target's own check fails with abort(), which no sanitizer reports.
void on_abort(int) {
  save_current_input();
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

Input read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Input(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<Input> read_corpus(const std::vector<std::string>& paths) {
  std::vector<Input> corpus;
  for (const std::string& path : paths) {
    if (!std::filesystem::is_directory(path)) {
      corpus.push_back(read_file(path));
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) corpus.push_back(read_file(file));
  }
  return corpus;
}

// Bytes that parsers treat specially: quotes, escapes, brackets, separators, line breaks, NUL,
// bytes that are not UTF-8 and the edges of integer ranges.
constexpr std::uint8_t kInteresting[] = {
    0x00, 0x01, 0x0a, 0x0d, 0x1b, ' ', '"',  '%',  '+',  ',',  '-',  '.',  '/',  '0',  '9',  ':',
    '=',  '[',  '\\', ']',  '{',  '}', 0x7f, 0x80, 0xbf, 0xc0, 0xe2, 0xed, 0xf0, 0xf4, 0xf5, 0xff};

// One to four edits of `input`: flip a bit, set or insert bytes, delete or duplicate a range,
// or splice in part of another corpus entry.
Input mutate(Input input, const std::vector<Input>& corpus, std::mt19937_64& rng,
             std::size_t max_len) {
  auto below = [&](std::size_t n) { return n == 0 ? 0 : std::size_t(rng() % n); };
  const int edits = 1 + int(below(4));
  for (int e = 0; e < edits; ++e) {
    switch (below(7)) {
      case 0:
        if (!input.empty()) input[below(input.size())] ^= std::uint8_t(1u << below(8));
        break;
      case 1:
        if (!input.empty()) input[below(input.size())] = kInteresting[below(sizeof kInteresting)];
        break;
      case 2:
        input.insert(input.begin() + std::ptrdiff_t(below(input.size() + 1)),
                     std::uint8_t(below(256)));
        break;
      case 3:
        input.insert(input.begin() + std::ptrdiff_t(below(input.size() + 1)),
                     kInteresting[below(sizeof kInteresting)]);
        break;
      case 4:
        if (!input.empty()) {
          const std::size_t at = below(input.size());
          const std::size_t n = 1 + below(std::min<std::size_t>(input.size() - at, 16));
          input.erase(input.begin() + std::ptrdiff_t(at), input.begin() + std::ptrdiff_t(at + n));
        }
        break;
      case 5:
        if (!input.empty()) {
          const std::size_t at = below(input.size());
          const std::size_t n = 1 + below(std::min<std::size_t>(input.size() - at, 64));
          const Input part(input.begin() + std::ptrdiff_t(at),
                           input.begin() + std::ptrdiff_t(at + n));
          input.insert(input.begin() + std::ptrdiff_t(below(input.size() + 1)), part.begin(),
                       part.end());
        }
        break;
      case 6: {
        const Input& other = corpus[below(corpus.size())];
        if (other.empty()) break;
        const std::size_t at = below(other.size());
        const std::size_t n = 1 + below(other.size() - at);
        input.insert(input.begin() + std::ptrdiff_t(below(input.size() + 1)),
                     other.begin() + std::ptrdiff_t(at), other.begin() + std::ptrdiff_t(at + n));
        break;
      }
    }
  }
  if (input.size() > max_len) input.resize(max_len);
  return input;
}

void run(const Input& input) {
  current = &input;
  // A copy of exactly the input's size, so that ASan sees a read past its end.
  std::vector<std::uint8_t> exact(input);
  LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
  current = nullptr;
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: fuzz_TARGET [--runs N] [--seed S] [--max-len BYTES] PATH...\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(save_current_input);
  std::signal(SIGABRT, on_abort);
  long runs = 500;
  std::uint64_t seed = 1;
  std::size_t max_len = 4096;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--runs" || arg == "--seed" || arg == "--max-len") && i + 1 < argc) {
      const char* value = argv[++i];
      char* end = nullptr;
      const unsigned long long number = std::strtoull(value, &end, 10);
      if (*value == '\0' || *end != '\0') usage();
      if (arg == "--runs") runs = long(number);
      if (arg == "--seed") seed = number;
      if (arg == "--max-len") max_len = number;
    } else if (arg.rfind("--", 0) == 0) {
      usage();
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) usage();
  std::vector<Input> corpus = read_corpus(paths);
  if (corpus.empty()) corpus.emplace_back();
  for (const Input& input : corpus) run(input);
  std::mt19937_64 rng(seed);
  for (long i = 0; i < runs; ++i) {
    run(mutate(corpus[std::size_t(rng() % corpus.size())], corpus, rng, max_len));
  }
  std::printf("%zu seed inputs and %ld mutations (seed %llu): no failure\n", corpus.size(), runs,
              static_cast<unsigned long long>(seed));
  return 0;
}
