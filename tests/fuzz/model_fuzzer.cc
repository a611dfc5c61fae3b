// Model files: a builder with its parameters, or an explicit graph (tensors,
// operators, attributes, `shard` strategies), built into an operator graph
// in two pipeline stages, recomputed.
#include "core/config/model_config.h"
#include "tests/fuzz/fuzz_inputs.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateJsonInput)

SHARDLAB_FUZZ_TARGET(model) {
  using namespace shardlab;
  using namespace shardlab::fuzz;
  const std::string file = SourcePath("configs/models/fuzz-model.json");
  const auto doc = ParseInput(data, size, file);
  if (!doc) return 0;
  const JsonNode root(*doc, file);
  ModelSpec model;
  if (!Accepts([&] { model = ReadModelSpec(root); })) return 0;
  Accepts([&] {
    const Graph graph = BuildModelGraph(model, BuildOptions{2, true}, root);
    Expect(!graph.operators().empty(), "a model without operators");
  });
  return 0;
}
