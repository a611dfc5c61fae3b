// Models from a Hugging Face `config.json`: the architecture named by its
// "model_type" becomes a builder model with the parameters it implies (GQA,
// SwiGLU, RMSNorm, RoPE, biases, tied embeddings), so the rest of the flow
// sees an ordinary builder model that a run's "model_params" can override.
#pragma once

#include <string>
#include <vector>

#include "core/config/model_config.h"

namespace shardlab {

// True when the document is a Hugging Face model config (it has "model_type").
bool IsHfModelConfig(const JsonNode& node);

// The "model_type" values shardlab reads.
const std::vector<std::string>& HfModelTypes();

// The builder model the config describes. Unknown architectures, and keys the
// builder cannot honour, are ConfigErrors naming the file and key.
ModelSpec ReadHfModelSpec(const JsonNode& node);

}  // namespace shardlab
