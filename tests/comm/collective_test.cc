#include "core/comm/collective.h"

#include <stdexcept>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/config/simulation_options.h"
#include "core/util/config_error.h"
#include "core/util/json_reader.h"

namespace shardlab {
namespace {

TEST_CASE("every collective and algorithm name parses back to its value") {
  for (const std::string& name : CollectiveNames()) CHECK(ToString(ParseCollective(name)) == name);
  for (const std::string& name : AlgorithmNames()) CHECK(ToString(ParseAlgorithm(name)) == name);
  CHECK(std::string(OperatorName(Collective::kAllToAll)) == "AlltoAll");
  CHECK(std::string(ToString(ReduceOp::kNone)).empty());
}

TEST_CASE("an unknown collective is an error naming the accepted ones, never a default") {
  try {
    ParseCollective("AllReduce");  // the operator name is not the config spelling
    FAIL("accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("allreduce, allgather") != std::string::npos);
  }
  CHECK_THROWS_AS(ParseAlgorithm("butterfly"), std::invalid_argument);
}

TEST_CASE("simulation options survive a JSON round trip, forced algorithms included") {
  const nlohmann::json j = nlohmann::json::parse(R"({"engine": "both", "mode": "infer",
      "pipeline_schedule": "interleaved", "virtual_pipeline_chunks": 2, "fidelity": "step", "optimizer": "momentum",
      "collective_algorithms": {"allreduce": "ring", "allgather": "auto"}})");
  const SimulationOptions s = ReadSimulation(JsonNode(j, "run.json", "/simulation"));
  CHECK(s.engine == Engine::kBoth);
  CHECK(!s.training());
  CHECK(s.pipeline_schedule == PipelineSchedule::kInterleaved);
  CHECK(s.fidelity == Fidelity::kStep);
  CHECK(s.optimizer == Optimizer::kMomentum);
  REQUIRE(s.collective_algorithms.size() == 1);  // "auto" is no override
  CHECK(s.collective_algorithms.at(Collective::kAllReduce) == CollectiveAlgorithm::kRing);
  const nlohmann::json back = ToJson(s);
  CHECK(ReadSimulation(JsonNode(back, "copy")) == s);
}

TEST_CASE("an unknown engine in a run file names the key and the accepted values") {
  const nlohmann::json j = nlohmann::json::parse(R"({"engine": "ns3"})");
  try {
    ReadSimulation(JsonNode(j, "run.json", "/simulation"));
    FAIL("accepted");
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    CHECK(message.find("/simulation/engine") != std::string::npos);
    CHECK(message.find("analytical") != std::string::npos);
  }
}

}  // namespace
}  // namespace shardlab
