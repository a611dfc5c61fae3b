// Operator graphs as JSON: what `shardlab graph --save` writes and what model
// files hold under "graph". Activations are not listed: they are the named
// outputs of operators, with shapes from shape inference.
#pragma once

#include <nlohmann/json.hpp>

#include "core/graph/graph.h"
#include "core/util/json_reader.h"

namespace shardlab {

nlohmann::json GraphToJson(const Graph& graph);
// Errors (unknown keys, unknown tensors, shape rules) name the JSON path.
Graph GraphFromJson(const JsonNode& node);
// Operator attributes: an object of bools, numbers, strings and integer lists.
Attrs AttrsFromJson(const JsonNode& node);

}  // namespace shardlab
