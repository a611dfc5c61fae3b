// MindSpore's Ascend context (`set_context(ascend_config=...)`, MindFormers'
// `context.ascend_config`), as a run file's "ascend_config" section. Of it
// shardlab reads the parallel speed-up file's `pp_1f1b_overlap`: the
// operator types whose collectives MindSpore runs beside the other pass of
// each 1F1B forward-backward pair. MindSpore's other keys are accepted with a
// warning that they are not modelled; keys MindSpore does not know are errors,
// as MindSpore makes them.
#pragma once

#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/collective.h"
#include "core/util/json_reader.h"

namespace shardlab {

// The operator types pp_1f1b_overlap may name (mindspore/python/mindspore/
// context.py, _check_speedup_config_str_value), in MindSpore's spelling.
enum class OverlapOperator {
  kAlltoAll,            // "AlltoAll": MoE token exchanges, Ulysses' sequence-for-heads exchange
  kAlltoAllV,           // "AlltoAllV": an AlltoAll of uneven slices (dropless MoE dispatch)
  kAllGather,           // "AllGather"
  kMorphAllGather,      // "MorphAllGather": MindFormers' tensor-parallel layers' own gather
  kReduceScatter,       // "ReduceScatter"
  kMorphReduceScatter,  // "MorphReduceScatter": MindFormers' tensor-parallel layers' own scatter
  kAllReduce,           // "AllReduce"
};

const char* ToString(OverlapOperator op);
// The collective an operator type runs.
Collective CollectiveOf(OverlapOperator op);

struct AscendConfig {
  // pp_1f1b_overlap's operator types as given, once each; empty: no overlap.
  std::vector<OverlapOperator> pp_1f1b_overlap;

  // The kinds of collective those operator types are, sorted, once each.
  std::vector<Collective> Pp1f1bOverlapCollectives() const;
  bool operator==(const AscendConfig&) const = default;
};

// `node`: the section; "parallel_speed_up_json_path" is relative to its file.
AscendConfig ReadAscendConfig(const JsonNode& node);
// The inline form: {"parallel_speed_up_json": {"pp_1f1b_overlap": "..."}}.
nlohmann::json ToJson(const AscendConfig& config);

}  // namespace shardlab
