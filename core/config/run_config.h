// A run file: which cluster, which model and which parallel settings, plus the
// simulation options. Cluster and model are inline objects or paths relative
// to the run file's folder.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/config/cluster_config.h"
#include "core/config/model_config.h"
#include "core/config/parallel_config.h"

namespace shardlab {

class JsonNode;

struct SimulationOptions {
  std::string engine = "simgrid";          // simgrid | analytical | both
  std::string mode = "train";              // train | infer
  std::string pipeline_schedule = "1f1b";  // 1f1b | gpipe | interleaved
  int64_t virtual_pipeline_chunks = 1;     // model chunks per stage (interleaved only)
  std::string fidelity = "aggregated";     // aggregated | step (collectives ring step by ring step)
  std::string optimizer = "adam";          // adam | lamb | momentum | sgd: optimizer state per parameter
  std::map<std::string, std::string> collective_algorithms;  // collective type -> algorithm

  bool operator==(const SimulationOptions&) const = default;
};

struct RunSpec {
  std::string name;
  std::string file;          // the run file, "" when read from memory
  std::string cluster_file;  // "" when inline
  std::string model_file;    // "" when inline
  ClusterSpec cluster;
  ModelSpec model;
  ParallelConfig parallel;
  SimulationOptions simulation;
};

RunSpec LoadRunFile(const std::string& path);
// `file` names the document in errors and anchors relative paths.
RunSpec ReadRunSpec(const JsonNode& node);

// The model's graph as this run needs it: one micro-batch of
// global_batch_size / micro_batch_num samples, layers split over the pipeline
// stages, recompute marks from the parallel settings.
Graph BuildRunGraph(const RunSpec& run);

// The run with cluster and model inline: a self-contained document.
nlohmann::json ToJson(const RunSpec& run);

}  // namespace shardlab
