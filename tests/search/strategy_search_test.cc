#include <algorithm>
#include <filesystem>

#include <catch2/catch.hpp>

#include "core/graph/graph_builder.h"
#include "core/search/dp_search.h"
#include "core/search/recursive_search.h"
#include "core/search/strategy_checkpoint.h"
#include "core/search/sharding_propagation.h"
#include "core/search/strategy_graph.h"
#include "core/search/strategy_proto.h"
#include "core/util/json_reader.h"
#include "core/util/progress_report.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

// A residual block: x -> MatMul -> ReLU -> MatMul -> Add(x) -> LayerNorm-free output.
Graph ResidualBlock() {
  GraphBuilder b("block");
  const int x = b.Input("x", {32, 64}, DType::kFloat32);
  const int w1 = b.Parameter("w1", {64, 128}, DType::kFloat32);
  const int w2 = b.Parameter("w2", {128, 64}, DType::kFloat32);
  const int h = b.MatMul("fc1", x, w1, false, false);
  const int a = b.Activation("ReLU", "relu", h);
  const int y = b.MatMul("fc2", a, w2, false, false);
  b.Binary("Add", "residual", y, x);
  return b.Finish();
}

SearchOptions Options(int64_t devices, const std::string& model = "mindspore") {
  SearchOptions o;
  o.stage_devices = devices;
  o.cost.model = model;
  return o;
}

TEST_CASE("dynamic programming finds the exhaustive optimum on a residual block") {
  const Graph graph = ResidualBlock();
  for (int64_t devices : {2, 4, 8}) {
    const StrategyGraph sg(graph, Options(devices));
    const auto dp = DynamicProgrammingSearch(sg);
    const auto all = ExhaustiveSearch(sg);
    INFO(devices << " devices");
    CHECK(sg.TotalCost(dp) == Approx(sg.TotalCost(all)).epsilon(1e-12));
  }
}

TEST_CASE("the dynamic-programming solve reports its eliminations inside the range it is given") {
  const Graph graph = ResidualBlock();
  const StrategyGraph sg(graph, Options(4));
  std::vector<double> reports;
  ScopedProgressListener listener([&](double f) { reports.push_back(f); });
  {
    ScopedProgressRange solving(0.8, 1);
    DynamicProgrammingSearch(sg);
  }
  REQUIRE(reports.size() >= 2);
  CHECK(std::is_sorted(reports.begin(), reports.end()));
  CHECK(reports.front() > 0.8);
  CHECK(reports.back() <= 1.0);
  // Every node but the last one or two (solved together) is eliminated.
  CHECK(reports.back() >= 0.8 + 0.2 * (sg.nodes().size() - 2.0) / sg.nodes().size());
}

TEST_CASE("a two-branch graph with a shared input is solved exactly through a triangle") {
  GraphBuilder b("branches");
  const int x = b.Input("x", {16, 32}, DType::kFloat32);
  const int w = b.Parameter("w", {32, 32}, DType::kFloat32);
  const int r = b.Activation("ReLU", "relu", x);
  const int m = b.MatMul("mm", r, w, false, false);
  const int t = b.Activation("Tanh", "tanh", r);
  b.Binary("Mul", "mul", m, t);
  const Graph graph = b.Finish();
  const StrategyGraph sg(graph, Options(4));
  CHECK(sg.TotalCost(DynamicProgrammingSearch(sg)) == Approx(sg.TotalCost(ExhaustiveSearch(sg))).epsilon(1e-12));
}

// The residual block with a batch of `batch` rows and `width` wide weights.
Graph WideBlock(int64_t batch, int64_t width, const GraphBuilder::OptStrategy& fc1 = std::nullopt) {
  GraphBuilder b("wide");
  const int x = b.Input("x", {batch, width}, DType::kFloat32);
  const int w1 = b.Parameter("w1", {width, width}, DType::kFloat32);
  const int w2 = b.Parameter("w2", {width, width}, DType::kFloat32);
  const int h = b.MatMul("fc1", x, w1, false, false, fc1);
  const int a = b.Activation("ReLU", "relu", h);
  const int y = b.MatMul("fc2", a, w2, false, false);
  b.Binary("Add", "residual", y, x);
  return b.Finish();
}

TEST_CASE("recursive_programming cuts a large batch over every device and keeps small weights whole") {
  // 4096 rows against 64 x 64 weights: any weight split costs activation traffic, the
  // batch split only the (gamma-weighted) mirror AllReduce of tiny weights.
  const Graph graph = WideBlock(4096, 64);
  const std::vector<OpLayout> layouts = RecursiveProgrammingSearch(graph, Options(8));
  REQUIRE(layouts.size() == graph.operators().size());
  CHECK(layouts[0].strategy == Strategy{{8, 1}, {1, 1}});  // fc1
  CHECK(layouts[1].strategy == Strategy{{8, 1}});          // relu
  CHECK(layouts[2].strategy == Strategy{{8, 1}, {1, 1}});  // fc2
  for (const OpLayout& l : layouts) {
    CHECK(l.repeat == 1);  // one halving per level: all 8 devices in use
    CHECK(l.forward_comm.empty());
  }
}

TEST_CASE("recursive_programming keeps a configured strategy and cuts its neighbours to match") {
  // fc1 column-parallel by configuration: its output arrives split along columns, so the
  // ReLU after it is cut the same way instead of paying a redistribution.
  const Graph graph = WideBlock(64, 1024, Strategy{{1, 1}, {1, 8}});
  const std::vector<OpLayout> layouts = RecursiveProgrammingSearch(graph, Options(8));
  CHECK(layouts[0].strategy == Strategy{{1, 1}, {1, 8}});
  CHECK(layouts[1].strategy == Strategy{{1, 8}});
  for (const OpLayout& l : layouts) CHECK(l.repeat == 1);
}

TEST_CASE("a shared parameter forces its users onto one layout in every mode") {
  GraphBuilder b("tied");
  const int x = b.Input("x", {16, 32}, DType::kFloat32);
  const int w = b.Parameter("w", {32, 32}, DType::kFloat32);
  const int h = b.MatMul("first", x, w, false, false);
  b.MatMul("second", h, w, false, false, Strategy{{1, 4}, {4, 1}});
  const Graph graph = b.Finish();
  const StrategyGraph sg(graph, Options(4));
  for (const auto& layouts : {sg.Layouts(DynamicProgrammingSearch(sg)), ShardingPropagation(sg)})
    CHECK(layouts[0].inputs[1].Normalized() == layouts[1].inputs[1].Normalized());
}

TEST_CASE("strategy checkpoints round-trip every operator's strategy") {
  Graph graph = ResidualBlock();
  const StrategyGraph sg(graph, Options(4));
  const auto layouts = sg.Layouts(DynamicProgrammingSearch(sg));
  const std::string path = (std::filesystem::temp_directory_path() / "shardlab-block.ckpt.json").string();
  SaveStrategyCheckpoint(path, ShardedGraph{graph, layouts, {}});
  const auto loaded = LoadStrategyCheckpoint(path);
  REQUIRE(loaded.size() == graph.operators().size());
  for (size_t i = 0; i < layouts.size(); ++i)
    CHECK(loaded.at(graph.op(static_cast<int>(i)).name).strategy == layouts[i].strategy);
}

TEST_CASE("protobuf strategy checkpoints use MindSpore's ParallelStrategyMap encoding") {
  ProtoStrategyMap map;
  map.current_stage = 1;
  map.items["a"] = {0, Strategy{{2, 1}}};
  // current_stage=1; item{node_name="a"; parallel_strategys{stage=0; parallel_strategy{dim=2; dim=1}}}
  const std::string expected = std::string(
      "\x08\x01\x12\x0d\x0a\x01"
      "a"
      "\x12\x08\x08\x00\x12\x04\x08\x02\x08\x01",
      17);
  CHECK(EncodeStrategyMap(map) == expected);
  // Packed dims, as proto3 writers emit them, decode too; unknown fields are skipped.
  const std::string packed = std::string(
      "\x08\x03\x12\x0c\x0a\x01"
      "b"
      "\x12\x07\x08\x01\x12\x03\x0a\x01\x04"
      "\x18\x07",
      18);
  const ProtoStrategyMap decoded = DecodeStrategyMap(packed);
  CHECK(decoded.current_stage == 3);
  CHECK(decoded.items.at("b").first == 1);
  CHECK(decoded.items.at("b").second == Strategy{{4}});
  CHECK_THROWS_WITH(DecodeStrategyMap(std::string("\x12\x05\x0a", 3)), Catch::Contains("runs past the end"));
}

TEST_CASE("protobuf strategy checkpoints round-trip through files") {
  Graph graph = ResidualBlock();
  const StrategyGraph sg(graph, Options(4));
  const auto layouts = sg.Layouts(DynamicProgrammingSearch(sg));
  const std::string path = (std::filesystem::temp_directory_path() / "shardlab-block.ckpt").string();
  SaveStrategyCheckpoint(path, ShardedGraph{graph, layouts, {}});
  const auto loaded = LoadStrategyCheckpoint(path);
  for (size_t i = 0; i < layouts.size(); ++i)
    CHECK(loaded.at(graph.op(static_cast<int>(i)).name).strategy == layouts[i].strategy);
}

}  // namespace
}  // namespace shardlab
