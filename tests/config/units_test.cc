#include "core/config/units.h"

#include "tests/test_util.h"

namespace shardlab {
namespace {

double Parse(const std::string& text, Quantity kind) {
  double v = -1;
  REQUIRE(ParseQuantity(text, kind, &v));
  return v;
}

TEST_CASE("quantities parse with decimal and binary units and bits") {
  CHECK(Parse("32 GiB", Quantity::kBytes) == 32.0 * 1024 * 1024 * 1024);
  CHECK(Parse("32GB", Quantity::kBytes) == 32e9);
  CHECK(Parse("100 Gb/s", Quantity::kBytesPerSecond) == 12.5e9);
  CHECK(Parse("400 Gbps", Quantity::kBytesPerSecond) == 50e9);
  CHECK(Parse("1.2 TB/s", Quantity::kBytesPerSecond) == Approx(1.2e12));
  CHECK(Parse("1.5 us", Quantity::kSeconds) == Approx(1.5e-6));
  CHECK(Parse("256 TFLOP/s", Quantity::kFlopsPerSecond) == 256e12);
  CHECK(Parse("2e3 B", Quantity::kBytes) == 2000);
}

TEST_CASE("quantities of the wrong kind or without a unit are rejected") {
  double v;
  CHECK_FALSE(ParseQuantity("32", Quantity::kBytes, &v));
  CHECK_FALSE(ParseQuantity("32 GB/s", Quantity::kBytes, &v));
  CHECK_FALSE(ParseQuantity("fast", Quantity::kSeconds, &v));
  CHECK_FALSE(ParseQuantity("1 gb/s", Quantity::kBytesPerSecond, &v));
}

TEST_CASE("ReadQuantity takes base-unit numbers and names the units on error") {
  testing::Doc doc(R"({"a": 1e9, "b": "3 parsecs", "c": 0})");
  CHECK(ReadQuantity(doc.root().Child("a"), Quantity::kBytes) == 1e9);
  const auto e = testing::ExpectConfigError([&] { ReadQuantity(doc.root().Child("b"), Quantity::kSeconds); });
  CHECK(e.pointer() == "/b");
  CHECK_THAT(std::string(e.what()), Catch::Contains("s, ms, us, ns"));
  CHECK_THAT(
      std::string(testing::ExpectConfigError([&] { ReadQuantity(doc.root().Child("c"), Quantity::kSeconds); }).what()),
      Catch::Contains("positive"));
}

TEST_CASE("quantities far outside what hardware has are typos, not simulated as inf or 0 s") {
  testing::Doc doc(R"({"tiny": 1e-320, "huge": 1e30, "zero": 0, "fine": "25 GB/s"})");
  const auto tiny =
      testing::ExpectConfigError([&] { ReadQuantity(doc.root().Child("tiny"), Quantity::kBytesPerSecond); });
  CHECK(tiny.pointer() == "/tiny");
  CHECK_THAT(std::string(tiny.what()), Catch::Contains("a value from 1 B/s to"));
  CHECK_THROWS(ReadQuantity(doc.root().Child("huge"), Quantity::kBytesPerSecond));
  CHECK(ReadQuantity(doc.root().Child("zero"), Quantity::kSeconds, true) == 0);
  CHECK(ReadQuantity(doc.root().Child("fine"), Quantity::kBytesPerSecond) == 25e9);
}

TEST_CASE("FormatQuantity picks a readable unit") {
  CHECK(FormatQuantity(32.0 * 1024 * 1024 * 1024, Quantity::kBytes) == "32 GiB");
  CHECK(FormatQuantity(12.5e9, Quantity::kBytesPerSecond) == "12.5 GB/s");
  CHECK(FormatQuantity(1.5e-6, Quantity::kSeconds) == "1.5 us");
  CHECK(FormatQuantity(256e12, Quantity::kFlopsPerSecond) == "256 TFLOP/s");
}

}  // namespace
TEST_CASE("command-line sizes take units or plain bytes") {
  CHECK(ParseSizeRange("1344904432", "--bytes") == std::vector<double>{1344904432.0});
  CHECK(ParseSizeRange("1GiB", "--bytes") == std::vector<double>{1073741824.0});
  CHECK(ParseSizeRange("1024..4KiB", "--bytes") == std::vector<double>{1024.0, 2048.0, 4096.0});
  CHECK_THROWS_WITH(ParseSizeRange("12x", "--bytes"), Catch::Contains("--bytes: \"12x\" is not a size"));
  CHECK_THROWS_WITH(ParseSizeRange("0", "--bytes"), Catch::Contains("is not a size"));
  CHECK_THROWS_WITH(ParseSizeRange("1e20B", "--bytes"), Catch::Contains("larger than the limit of 1 TiB"));
  CHECK_THROWS_WITH(ParseSizeRange("nanB", "--bytes"), Catch::Contains("is not a size"));
}

}  // namespace shardlab
