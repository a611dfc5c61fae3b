#include "core/config/ascend_config.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/util/enum_names.h"
#include "core/util/input_file.h"
#include "core/util/paths.h"
#include "core/util/quote.h"
#include "core/util/warning.h"

namespace shardlab {
namespace {

constexpr EnumNames<OverlapOperator, 7> kOverlapOperators({"AlltoAll", "AlltoAllV", "AllGather", "MorphAllGather",
                                                           "ReduceScatter", "MorphReduceScatter", "AllReduce"});

// MindSpore checks each key's Python type; a bool is an int there too, and
// the two recompute-overlap keys take a bool as well as a string.
enum class ValueType { kBool, kString, kStringOrBool, kInt };

// The parallel speed-up file's keys MindSpore accepts (context.py,
// _set_speedup_config_path's valid_option), with their types.
const std::map<std::string, ValueType>& SpeedUpKeys() {
  static const std::map<std::string, ValueType> kKeys = {
      {"recompute_comm_overlap", ValueType::kStringOrBool},
      {"recomputation_communication_overlap", ValueType::kStringOrBool},
      {"matmul_grad_comm_overlap", ValueType::kBool},
      {"grad_matmul_communication_overlap", ValueType::kBool},
      {"enable_task_opt", ValueType::kBool},
      {"enable_communication_fusion", ValueType::kBool},
      {"enable_grad_comm_opt", ValueType::kBool},
      {"grad_computation_allreduce_overlap", ValueType::kBool},
      {"recompute_allgather_overlap_fagrad", ValueType::kBool},
      {"grad_fa_allgather_overlap", ValueType::kBool},
      {"interleaved_matmul_comm", ValueType::kBool},
      {"bias_add_comm_swap", ValueType::kBool},
      {"allreduce_and_biasadd_swap", ValueType::kBool},
      {"enable_opt_shard_comm_opt", ValueType::kBool},
      {"computation_allgather_overlap", ValueType::kBool},
      {"enable_begin_end_inline_opt", ValueType::kBool},
      {"enable_concat_eliminate_opt", ValueType::kBool},
      {"interleaved_layernorm_comm", ValueType::kBool},
      {"enable_allreduce_slice_to_reducescatter", ValueType::kBool},
      {"enable_interleave_split_concat_branch", ValueType::kBool},
      {"enable_interleave_parallel_branch", ValueType::kBool},
      {"enable_offloading_packed_experts", ValueType::kBool},
      {"compute_communicate_fusion_level", ValueType::kInt},
      {"computation_communication_fusion_level", ValueType::kInt},
      {"enable_flash_attention_load_balance", ValueType::kBool},
      {"pp_1f1b_overlap", ValueType::kString},
      {"dataset_broadcast_opt_level", ValueType::kInt}};
  return kKeys;
}

// MindSpore's ascend_config keys (context.py, _set_ascend_config) other than
// the speed-up file's path.
const std::vector<std::string>& OtherAscendKeys() {
  static const std::vector<std::string> kKeys = {"precision_mode",
                                                 "jit_compile",
                                                 "atomic_clean_policy",
                                                 "matmul_allow_hf32",
                                                 "conv_allow_hf32",
                                                 "exception_dump",
                                                 "op_precision_mode",
                                                 "ge_options",
                                                 "host_scheduling_max_threshold",
                                                 "cur_step_num",
                                                 "save_checkpoint_steps",
                                                 "need_ckpt",
                                                 "last_triggered_step",
                                                 "hccl_watchdog",
                                                 "topo_order",
                                                 "op_debug_option"};
  return kKeys;
}

std::vector<std::string> KeysOf(const std::map<std::string, ValueType>& keys) {
  std::vector<std::string> names;
  for (const auto& [name, type] : keys) names.push_back(name);
  return names;
}

std::vector<OverlapOperator> ReadOverlapOperators(const JsonNode& node) {
  const std::string text = node.AsString();
  std::vector<OverlapOperator> ops;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string name = text.substr(begin, comma - begin);
    begin = comma + 1;
    if (name.empty()) continue;  // MindSpore takes "" (its default) and skips empty entries
    const auto op = kOverlapOperators.Find(name);
    if (!op)
      node.Fail(fmt::format("expected comma-separated operator types among {}, got {}",
                            fmt::join(kOverlapOperators.All(), ", "), Quoted(name)));
    if (std::find(ops.begin(), ops.end(), *op) == ops.end()) ops.push_back(*op);
  }
  return ops;
}

void ReadSpeedUp(const JsonNode& node, AscendConfig& config) {
  if (!node.json().is_object()) node.Fail("expected an object of MindSpore's parallel speed-up keys");
  for (const auto& [key, value] : node.json().items()) {
    const JsonNode child = node.Child(key);
    const auto known = SpeedUpKeys().find(key);
    if (known == SpeedUpKeys().end())
      child.Fail(fmt::format("MindSpore's parallel speed-up keys are {}", fmt::join(KeysOf(SpeedUpKeys()), ", ")));
    const ValueType type = known->second;
    const bool typed = type == ValueType::kBool           ? value.is_boolean()
                       : type == ValueType::kString       ? value.is_string()
                       : type == ValueType::kStringOrBool ? value.is_string() || value.is_boolean()
                                                          : value.is_number_integer() || value.is_boolean();
    if (!typed)
      child.Fail(fmt::format("expected {}, got {}",
                             type == ValueType::kBool           ? "true or false"
                             : type == ValueType::kString       ? "a string"
                             : type == ValueType::kStringOrBool ? "a string, true or false"
                                                                : "an integer",
                             child.Describe()));
    if (key == "pp_1f1b_overlap") {
      config.pp_1f1b_overlap = ReadOverlapOperators(child);
    } else {
      Warn(fmt::format("{}: {}: the parallel speed-up key \"{}\" is not modelled; shardlab ignores it", child.file(),
                       child.pointer(), key));
    }
  }
}

}  // namespace

const char* ToString(OverlapOperator op) { return kOverlapOperators[op]; }

Collective CollectiveOf(OverlapOperator op) {
  switch (op) {
    case OverlapOperator::kAlltoAll:
    case OverlapOperator::kAlltoAllV:
      return Collective::kAllToAll;
    case OverlapOperator::kAllGather:
    case OverlapOperator::kMorphAllGather:
      return Collective::kAllGather;
    case OverlapOperator::kReduceScatter:
    case OverlapOperator::kMorphReduceScatter:
      return Collective::kReduceScatter;
    case OverlapOperator::kAllReduce:
      return Collective::kAllReduce;
  }
  return Collective::kAllReduce;
}

std::vector<Collective> AscendConfig::Pp1f1bOverlapCollectives() const {
  std::vector<Collective> collectives;
  for (OverlapOperator op : pp_1f1b_overlap) collectives.push_back(CollectiveOf(op));
  std::sort(collectives.begin(), collectives.end());
  collectives.erase(std::unique(collectives.begin(), collectives.end()), collectives.end());
  return collectives;
}

AscendConfig ReadAscendConfig(const JsonNode& node) {
  if (!node.json().is_object()) node.Fail("expected an object (MindSpore's ascend_config)");
  AscendConfig config;
  // MindSpore's None or "" leaves the path unset.
  const auto& j = node.json();
  const bool path = j.contains("parallel_speed_up_json_path") && !j["parallel_speed_up_json_path"].is_null() &&
                    j["parallel_speed_up_json_path"] != "";
  if (path && j.contains("parallel_speed_up_json"))
    node.Child("parallel_speed_up_json")
        .Fail(
            "give the parallel speed-up keys once: parallel_speed_up_json_path (MindSpore's) or "
            "parallel_speed_up_json (the file's content inline)");
  for (const auto& item : node.json().items()) {
    const std::string& key = item.key();
    const JsonNode child = node.Child(key);
    if (key == "comment") continue;
    if (key == "parallel_speed_up_json") {
      ReadSpeedUp(child, config);
    } else if (key == "parallel_speed_up_json_path") {
      if (!path) continue;
      const std::string file = ResolveRelativeTo(node.file(), child.AsString());
      if (const std::string problem = InputFileProblem(file); !problem.empty())
        child.Fail("the file " + Quoted(file, 400) + " " + problem);
      const nlohmann::json document = ReadJsonFile(file);
      ReadSpeedUp(JsonNode(document, file), config);
    } else if (std::find(OtherAscendKeys().begin(), OtherAscendKeys().end(), key) != OtherAscendKeys().end()) {
      Warn(fmt::format("{}: {}: the ascend_config key \"{}\" is not modelled; shardlab ignores it", child.file(),
                       child.pointer(), key));
    } else {
      std::vector<std::string> keys = OtherAscendKeys();
      keys.insert(keys.begin(), {"parallel_speed_up_json_path", "parallel_speed_up_json"});
      child.Fail(fmt::format("MindSpore's ascend_config keys are {}", fmt::join(keys, ", ")));
    }
  }
  return config;
}

nlohmann::json ToJson(const AscendConfig& config) {
  std::vector<std::string> names;
  for (OverlapOperator op : config.pp_1f1b_overlap) names.push_back(ToString(op));
  return {{"parallel_speed_up_json", {{"pp_1f1b_overlap", fmt::format("{}", fmt::join(names, ","))}}}};
}

}  // namespace shardlab
