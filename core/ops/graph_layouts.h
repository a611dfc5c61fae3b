// Layouts of every operator of a graph under semi_auto_parallel rules: the
// configured `shard` strategy, or MindSpore's data-parallel default; a Reshape
// without a strategy keeps its producer's split. A parameter shared by
// several operators must have one layout in all of them.
#pragma once

#include <vector>

#include "core/graph/graph.h"
#include "core/ops/op_layout.h"

namespace shardlab {

// Whether a Reshape (or Flatten) may carry a strategy: in semi_auto_parallel
// it follows its input and a configured one is an error; strategies a search
// chose (a checkpoint, a document) give it one of its own.
enum class ReshapeStrategy {
  kFollowsInput,  // the producer's split; a configured strategy is an error
  kAsGiven,       // the operator's strategy when it has one, else the producer's split
};

// One OpLayout per operator, in graph order. Errors (a strategy that breaks a
// rule, inconsistent shared parameters) name the operator; a configured
// strategy's error is a ConfigError where it was written (see below).
std::vector<OpLayout> InferGraphLayouts(const Graph& graph, int64_t stage_devices,
                                        ReshapeStrategy reshape = ReshapeStrategy::kFollowsInput);

// The error for an operator whose configured strategy breaks a rule: a
// ConfigError at the place the strategy was written (Operator::strategy_source),
// a LayoutError naming the operator when no file wrote it.
[[noreturn]] void FailConfiguredStrategy(const Operator& op, const std::string& problem);

// Throws LayoutError when a parameter is laid out differently by two of its users.
void CheckSharedParameters(const Graph& graph, const std::vector<OpLayout>& layouts);

}  // namespace shardlab
