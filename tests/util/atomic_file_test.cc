#include "core/util/atomic_file.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <sys/stat.h>

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

TEST_CASE("an atomic write follows a symbolic link and replaces its target") {
  const fs::path dir = fs::temp_directory_path() / "shardlab-atomic-link-test";
  fs::remove_all(dir);
  fs::create_directories(dir / "real");
  fs::create_symlink("real/out.json", dir / "link.json");
  WriteFileAtomically((dir / "link.json").string(), "through the link");
  CHECK(fs::is_symlink(fs::symlink_status(dir / "link.json")));
  CHECK(Slurp(dir / "real/out.json") == "through the link");
  fs::remove_all(dir);
}

TEST_CASE("an atomic write writes through a character device and a FIFO instead of replacing them") {
  WriteFileAtomically("/dev/null", "discarded");
  CHECK(fs::is_character_file("/dev/null"));
  const fs::path fifo = fs::temp_directory_path() / "shardlab-atomic-fifo";
  fs::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // Nobody reads the FIFO: an error, not a hang.
  CHECK_THROWS_WITH(WriteFileAtomically(fifo.string(), "x"), Catch::Contains("no process reads this FIFO"));
  std::string received;
  std::thread reader([&] { received = Slurp(fifo); });
  // The reader opens the FIFO first; retry until it has.
  for (int attempt = 0; attempt < 500; ++attempt) {
    try {
      WriteFileAtomically(fifo.string(), "streamed");
      break;
    } catch (const std::runtime_error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  reader.join();
  CHECK(received == "streamed");
  CHECK(fs::is_fifo(fifo));
  fs::remove(fifo);
}

TEST_CASE("an atomic write refuses a folder and takes names as long as the file system allows") {
  const fs::path dir = fs::temp_directory_path() / "shardlab-atomic-name-test";
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  CHECK_THROWS_WITH(WriteFileAtomically((dir / "sub").string(), "x"), Catch::Contains("it is a folder"));
  const fs::path long_name = dir / (std::string(250, 'n') + ".json");
  WriteFileAtomically(long_name.string(), "long");
  CHECK(Slurp(long_name) == "long");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shardlab
