// MindSpore's Ascend context (`set_context(ascend_config=...)`, MindFormers'
// `context.ascend_config`), as a run file's "ascend_config" section. Of it
// shardlab reads the parallel speed-up file's `pp_1f1b_overlap`: the
// operator types whose collectives MindSpore runs beside the other pass of
// each 1F1B forward-backward pair. MindSpore's other keys are accepted with a
// warning that they are not modelled; keys MindSpore does not know are errors,
// as MindSpore makes them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/collective.h"
#include "core/util/json_reader.h"

namespace shardlab {

struct AscendConfig {
  // pp_1f1b_overlap's operator types in MindSpore's spelling, as given
  // (AlltoAll, AlltoAllV, AllGather, MorphAllGather, ReduceScatter,
  // MorphReduceScatter, AllReduce); empty: no overlap.
  std::vector<std::string> pp_1f1b_overlap;

  // The kinds of collective those operator types are, sorted, once each.
  std::vector<Collective> Pp1f1bOverlapCollectives() const;
  bool operator==(const AscendConfig&) const = default;
};

// `node`: the section; "parallel_speed_up_json_path" is relative to its file.
AscendConfig ReadAscendConfig(const JsonNode& node);
// The inline form: {"parallel_speed_up_json": {"pp_1f1b_overlap": "..."}}.
nlohmann::json ToJson(const AscendConfig& config);

}  // namespace shardlab
