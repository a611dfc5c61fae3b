// `fuzz_replay TARGET PATH...`: runs every file under PATH (a file or a
// folder, recursively) through the fuzz target TARGET once, in the ordinary
// build, so that the committed corpus (seeds and every input that once
// failed) is a regression test with or without libFuzzer. A failing input
// aborts through the oracle; its name is printed first.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

namespace shardlab::fuzz {
namespace {

std::map<std::string, FuzzEntry>& Targets() {
  static std::map<std::string, FuzzEntry> targets;
  return targets;
}

}  // namespace

bool RegisterFuzzTarget(const std::string& name, FuzzEntry entry) {
  Targets()[name] = entry;
  return true;
}

}  // namespace shardlab::fuzz

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  using shardlab::fuzz::Targets;
  if (argc < 3 || !Targets().count(argv[1])) {
    std::fprintf(stderr, "usage: fuzz_replay TARGET PATH...; targets:");
    for (const auto& [name, entry] : Targets()) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  const auto entry = Targets()[argv[1]];
  std::vector<fs::path> files;
  for (int i = 2; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::fprintf(stderr, "%s\n", file.c_str());
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%s: %zu inputs replayed, all clean\n", argv[1], files.size());
  return 0;
}
