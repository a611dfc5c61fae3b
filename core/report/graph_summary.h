// What a model is made of: operators by type, parameters (count and bytes),
// FLOPs per sample, per pipeline stage. `shardlab graph` prints it and
// `shardlab simulate` uses it for the model line of its summary.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/graph/graph.h"

namespace shardlab {

struct StageSummary {
  int64_t operators = 0;
  int64_t parameters = 0;  // elements of trainable parameters
  double parameter_bytes = 0;
  double forward_flops = 0;  // for the whole graph batch
  double backward_flops = 0;
};

struct GraphSummary {
  std::string name;
  int64_t batch = 1;  // samples the graph processes at once
  // Passes of the graph per sequence (sequence pipelining: the graph is one
  // chunk's pass); the FLOPs below are the whole sequences'.
  int64_t seq_chunks = 1;
  int64_t operators = 0;
  std::map<std::string, int64_t> operators_by_type;
  int64_t tensors = 0;
  int64_t parameter_tensors = 0;
  int64_t parameters = 0;  // elements of trainable parameters
  int64_t non_trainable_parameters = 0;
  double parameter_bytes = 0;  // trainable and not
  double forward_flops = 0;    // for the whole batch
  double backward_flops = 0;
  double recompute_flops = 0;  // forward FLOPs of the recompute-marked operators (they run again before backward)
  int64_t host_operators = 0;  // primitive_target "CPU"
  int64_t strategies = 0;      // operators with a configured shard strategy
  std::vector<StageSummary> stages;

  double forward_flops_per_sample() const { return forward_flops / static_cast<double>(batch); }
  double training_flops_per_sample() const { return (forward_flops + backward_flops) / static_cast<double>(batch); }
};

// `batch` is the number of samples the graph's shapes hold; `seq_chunks`
// the passes of the graph each sequence takes (SequenceChunks).
GraphSummary SummarizeGraph(const Graph& graph, int64_t batch, int64_t seq_chunks = 1);
std::string FormatGraphSummary(const GraphSummary& summary);
nlohmann::json ToJson(const GraphSummary& summary);

// "174.6 B", "25.6 M", "812 K"
std::string FormatCount(double count);
// "3.15 TFLOP", "1.2 PFLOP"
std::string FormatFlops(double flops);

}  // namespace shardlab
