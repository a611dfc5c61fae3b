// A model file: a builder with parameters ({"builder": "gpt", "params":
// {...}}), an explicit operator graph ({"graph": {...}}), or a Hugging Face
// config.json (read by core/config/hf_model_config.h into a builder model).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/graph/builders/model_builder.h"
#include "core/graph/graph.h"

namespace shardlab {

class JsonNode;

struct ModelSpec {
  std::string name;
  std::string builder;   // empty for an explicit graph
  BuilderParams params;  // complete: defaults filled in
  std::optional<Graph> graph;
};

ModelSpec ReadModelSpec(const JsonNode& node);

// The chunks each sequence runs through the pipeline as (the builder's
// seq_split_num; 1 without): the model's graph is one chunk's pass.
int64_t SequenceChunks(const ModelSpec& model);

// Overrides builder parameters from a run's "model_params" object, checking
// names, types and ranges against the builder.
void ApplyModelParams(ModelSpec& model, const JsonNode& node);

// The model's operator graph. For builder models, `options` says how to split
// layers into pipeline stages and whether to mark them for recompute; builder
// errors (shapes that do not divide, too few layers) name `where`.
Graph BuildModelGraph(const ModelSpec& model, const BuildOptions& options, const JsonNode& where);

nlohmann::json ToJson(const ModelSpec& model);

// The model's compute dtype: its builder's "dtype" parameter, float32 otherwise.
DType ComputeDType(const ModelSpec& model);

}  // namespace shardlab
