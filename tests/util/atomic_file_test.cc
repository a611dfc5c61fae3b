#include "core/util/atomic_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/test_util.h"

namespace shardlab {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("atomic writes replace the file and leave no temporary behind") {
  const fs::path dir = fs::temp_directory_path() / "shardlab-atomic-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path target = dir / "out.json";
  WriteFileAtomically(target.string(), "first");
  WriteFileAtomically(target.string(), "second");
  CHECK(Slurp(target) == "second");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  fs::remove_all(dir);
}

TEST_CASE("a write into a missing folder fails with the path and leaves nothing") {
  CHECK_THROWS_WITH(WriteFileAtomically("/nonexistent-shardlab/out.json", "x"),
                    Catch::Contains("cannot write /nonexistent-shardlab/out.json"));
  CHECK_FALSE(fs::exists("/nonexistent-shardlab"));
}

}  // namespace
}  // namespace shardlab
