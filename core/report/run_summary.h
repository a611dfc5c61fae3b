// The summary of a validated run: the cluster, the devices it uses, the model
// and the parallel settings, and the work of one training step with its
// lower bound at peak compute.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/config/run_config.h"
#include "core/report/graph_summary.h"

namespace shardlab {

struct RunSummary {
  std::string name;
  int64_t devices = 0;
  int64_t servers_used = 0;
  int64_t devices_per_stage = 0;
  GraphSummary model;     // one micro-batch
  double step_flops = 0;  // every micro-batch, forward + backward (+ recompute)
  double peak_flops_per_device = 0;
  double ideal_step_seconds = 0;  // step_flops over every device at peak: a lower bound
};

RunSummary SummarizeRun(const RunSpec& run, const Graph& graph);
std::string FormatRunSummary(const RunSpec& run, const RunSummary& summary);
nlohmann::json ToJson(const RunSummary& summary);

// "semi_auto_parallel, 16 pipeline stages, micro_batch_num 32, ..." in one line.
std::string DescribeParallel(const ParallelConfig& parallel);

// "interleaved over 4 chunks per stage; ..." in one line: the pipeline
// schedule a training step runs and whether its forwards and backwards
// overlap. Empty when there is nothing to schedule (one stage, one pass at a time, or inference).
std::string DescribeSchedule(const SimulationOptions& simulation, const PassOverlap& overlap, int64_t pipeline_stages,
                             int64_t seq_chunks);

}  // namespace shardlab
