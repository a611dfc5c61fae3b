// A run file: which cluster, which model and which parallel settings, plus the
// simulation options. Cluster and model are inline objects or paths relative
// to the run file's folder.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/pass_overlap.h"
#include "core/config/ascend_config.h"
#include "core/config/cluster_config.h"
#include "core/config/model_config.h"
#include "core/config/parallel_config.h"
#include "core/config/simulation_options.h"
#include "core/config/software_stack.h"

namespace shardlab {

class JsonNode;

struct RunSpec {
  std::string name;
  std::string file;          // the run file, "" when read from memory
  std::string cluster_file;  // "" when inline
  std::string model_file;    // "" when inline
  ClusterSpec cluster;
  ModelSpec model;
  ParallelConfig parallel;
  SimulationOptions simulation;
  SoftwareStack stack;
  AscendConfig ascend_config;
};

RunSpec LoadRunFile(const std::string& path);
// What runs beside the other pass when forwards and backwards are paired:
// simulation.overlap_forward_backward's dimensions, or MindSpore's
// pp_1f1b_overlap's operator types, of any dimension (empty: neither).
PassOverlap ForwardBackwardOverlap(const RunSpec& run);
// The run file with keys changed first (`--set`): each setting is
// "dotted.key=VALUE", VALUE as JSON or else as a string ("parallel.micro_batch_num=64",
// "model_params.fp8=hybrid"). Errors name the setting; the run's own checks follow.
RunSpec LoadRunFile(const std::string& path, const std::vector<std::string>& settings);
// Sets a dotted key of a run document, making the objects on the way; throws
// std::invalid_argument when the path runs through something not an object.
void SetDottedKey(nlohmann::json& document, const std::string& key, const nlohmann::json& value);
// Applies `--set` settings to a run document as LoadRunFile does; an ordered
// document keeps its author's key order (a run file written back).
void ApplySettings(nlohmann::json& document, const std::vector<std::string>& settings);
void ApplySettings(nlohmann::ordered_json& document, const std::vector<std::string>& settings);
// `file` names the document in errors and anchors relative paths.
RunSpec ReadRunSpec(const JsonNode& node);

// The model's graph as this run needs it: one micro-batch of
// global_batch_size / micro_batch_num samples, layers split over the pipeline
// stages, recompute marks from the parallel settings.
Graph BuildRunGraph(const RunSpec& run);

// The run with cluster and model inline: a self-contained document.
nlohmann::json ToJson(const RunSpec& run);

}  // namespace shardlab
