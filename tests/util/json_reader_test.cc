#include "core/util/json_reader.h"

#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "core/util/input_file.h"
#include "core/util/paths.h"
#include "core/util/quote.h"
#include "core/util/suggest.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

TEST_CASE("syntax errors name the file, line and column") {
  const ConfigError e = testing::ExpectConfigError([] { ParseJsonText("{\n  \"a\": 1,\n  \"b\": }", "f.json"); });
  CHECK(e.file() == "f.json");
  CHECK(std::string(e.what()) == "f.json: /: not valid JSON at line 3, column 8: unexpected '}'; expected '[', '{', or a literal");
}

TEST_CASE("a number past double's range is a config error, not an escaped exception") {
  // Found by the config fuzzer: nlohmann throws out_of_range (not parse_error) for it.
  const ConfigError e = testing::ExpectConfigError([] { ParseJsonText("{\"a\": -6e6666}", "f.json"); });
  CHECK(std::string(e.what()) == "f.json: /: not valid JSON at line 1, column 7: the number \"-6e6666\" is beyond the range of a double");
}

TEST_CASE("a missing file is a config error") {
  const ConfigError e = testing::ExpectConfigError([] { ReadJsonFile("/nonexistent/run.json"); });
  CHECK_THAT(std::string(e.what()), Catch::Contains("/nonexistent/run.json: /: cannot open the file"));
}

TEST_CASE("pointers escape ~ and / in keys") {
  testing::Doc doc(R"({"a/b": {"c~d": 1}})");
  CHECK(doc.root().Child("a/b").Child("c~d").pointer() == "/a~1b/c~0d");
}

TEST_CASE("object readers allow comments and reject unknown keys") {
  testing::Doc doc(R"({"comment": ["source: datasheet"], "size": 3, "sise": 4})");
  ObjectReader reader(doc.root());
  CHECK(reader.Int("size", 0, 0, 10) == 3);
  const ConfigError e = testing::ExpectConfigError([&] { reader.Finish(); });
  CHECK(e.pointer() == "/sise");
  CHECK_THAT(std::string(e.what()), Catch::Contains("did you mean 'size'"));
  testing::Doc bad_comment(R"({"comment": 3})");
  CHECK_THROWS_AS(ObjectReader(bad_comment.root()), ConfigError);
}

TEST_CASE("a missing member or element is a config error at its parent, not an escaped exception") {
  const nlohmann::json doc = nlohmann::json::parse(R"({"a": {"b": [1, 2]}})");
  const JsonNode root(doc, "x.json");
  const ConfigError key = testing::ExpectConfigError([&] { root.Child("a").Child("c"); });
  CHECK(key.pointer() == "/a");
  CHECK_THAT(key.what(), Catch::Contains("missing key \"c\""));
  const ConfigError index = testing::ExpectConfigError([&] { root.Child("a").Child("b").Element(2); });
  CHECK(index.pointer() == "/a/b");
  CHECK_THAT(index.what(), Catch::Contains("a list of 2 has no element 2"));
  CHECK_THROWS_AS(root.Child("a").Child("b").Child("x"), ConfigError);
}

TEST_CASE("typed reads describe what they got") {
  testing::Doc doc(R"({"s": "text", "n": 2.5, "big": 18446744073709551615, "l": [1, "x"]})");
  CHECK_THROWS_WITH(doc.root().Child("s").AsInt(0, 9), Catch::Contains("got the string \"text\""));
  CHECK_THROWS_WITH(doc.root().Child("n").AsBool(), Catch::Contains("got the number 2.5"));
  CHECK_THROWS_WITH(doc.root().Child("big").AsInt(0, 9), Catch::Contains("expected an integer"));
  CHECK_THROWS_WITH(doc.root().Child("l").AsIntList(0, 9), Catch::Contains("/l/1: expected an integer"));
  CHECK(doc.root().Child("n").AsNumber(0, 3) == 2.5);
}

TEST_CASE("suggestions find plausible typos only") {
  const std::vector<std::string> keys = {"pipeline_stages", "micro_batch_num", "device_num"};
  CHECK(ClosestMatch("pipline_stages", keys) == "pipeline_stages");
  CHECK(ClosestMatch("device_nums", keys) == "device_num");
  CHECK(ClosestMatch("zzz", keys).empty());
  CHECK(EditDistance("kitten", "sitting") == 3);
}

}  // namespace
}  // namespace shardlab

namespace shardlab {
namespace {

TEST_CASE("a path in a file is relative to that file's folder; absolute ones and documents in memory stay") {
  CHECK(ResolveRelativeTo("configs/runs/a.json", "../clusters/c.json") == "configs/clusters/c.json");
  CHECK(ResolveRelativeTo("configs/runs/a.json", "/tmp/c.json") == "/tmp/c.json");
  CHECK(ResolveRelativeTo("", "x/./y.json") == "x/y.json");
  CHECK(ResolveRelativeTo("a.json", "") == "");
  CHECK(RebaseRelative("../clusters/c.json", "configs/runs/a.json", "configs/runs/tuned/b.json") ==
        "../../clusters/c.json");
  CHECK(RebaseRelative("/abs.json", "a/b.json", "c/d.json") == "/abs.json");
  // A file named without a folder lives in the working folder.
  CHECK(RebaseRelative("../clusters/c.json", "configs/runs/a.json", "tuned.json") == "configs/clusters/c.json");
}

TEST_CASE("input files must be regular files within the size cap") {
  CHECK_THROWS_WITH(ReadJsonFile("/dev/zero"), Catch::Contains("/dev/zero: /: expected a regular file, this is a "
                                                               "character device"));
  CHECK_THROWS_WITH(ReadJsonFile(testing::SourcePath("configs")), Catch::Contains("this is a folder"));
  const std::filesystem::path fifo = std::filesystem::temp_directory_path() / "shardlab-input-fifo";
  std::filesystem::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(ReadJsonFile(fifo.string()), Catch::Contains("this is a FIFO"));  // at once, no writer needed
  std::filesystem::remove(fifo);
  const std::filesystem::path big = std::filesystem::temp_directory_path() / "shardlab-input-big.json";
  std::ofstream(big) << std::string(2048, ' ') << "{}";
  CHECK(ReadInputFile(big.string()).size() == 2050);
  CHECK_THROWS_WITH(ReadInputFile(big.string(), 1024), Catch::Contains("input files are limited to 1024 bytes"));
  std::filesystem::remove(big);
}

TEST_CASE("a missing required key names the key of the object that misspells it") {
  const nlohmann::json doc = {{"clustr", "a.json"}, {"name", "x"}};
  ObjectReader reader(JsonNode(doc, "run.json"));
  CHECK_THROWS_WITH(reader.Required("cluster"),
                    Catch::Contains("missing required key \"cluster\" (is \"clustr\" a misspelling of it?)"));
  CHECK_THROWS_WITH(reader.Required("model"), Catch::EndsWith("missing required key \"model\""));
}

TEST_CASE("user text in messages is escaped and cut") {
  CHECK(Quoted("plain") == "\"plain\"");
  CHECK(Quoted("a\nb\x1b[31m\"") == "\"a\\nb\\x1b[31m\\\"\"");
  CHECK(Quoted(std::string(100, 'k'), 10) == "\"kkkkkkkkkk...\" (100 characters)");
  CHECK(OneLine("two\nlines") == "two\\nlines");
  CHECK(OneLine(std::string(50, 'x'), 20) == std::string(20, 'x') + "... (30 more characters)");
  // A huge unknown key costs no edit distance and prints a short line.
  nlohmann::json doc = {{std::string(1 << 22, 'q'), 1}};
  ObjectReader reader(JsonNode(doc, "big.json"));
  try {
    reader.Finish();
    FAIL("expected an error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).size() < 1000);
    CHECK_THAT(std::string(e.what()), Catch::Contains("(4194304 characters)"));
  }
}

}  // namespace
}  // namespace shardlab
