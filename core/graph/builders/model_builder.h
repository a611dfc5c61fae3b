// The model builders users simulate (GPT/Transformer decoders, BERT, ResNet-50,
// Wide&Deep, the seeds' FFN): each declares its parameters with defaults and
// ranges, and builds an operator graph from them.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/graph/graph.h"

namespace shardlab {

// An integer, a flag, a name, a list of integers (each within the spec's
// range), or a real number (within it too).
using ParamValue = std::variant<int64_t, bool, std::string, std::vector<int64_t>, double>;

struct ParamSpec {
  std::string name;
  ParamValue fallback;
  std::string help;
  int64_t min = 0;  // integer, integer-list and number parameters only
  int64_t max = std::numeric_limits<int32_t>::max();
  std::vector<std::string> choices = {};  // string parameters only
};

// A complete set of parameter values (defaults filled in).
class BuilderParams {
 public:
  BuilderParams() = default;
  explicit BuilderParams(std::map<std::string, ParamValue> values) : values_(std::move(values)) {}

  int64_t Int(const std::string& name) const { return std::get<int64_t>(values_.at(name)); }
  bool Bool(const std::string& name) const { return std::get<bool>(values_.at(name)); }
  double Number(const std::string& name) const { return std::get<double>(values_.at(name)); }
  const std::string& String(const std::string& name) const { return std::get<std::string>(values_.at(name)); }
  const std::vector<int64_t>& Ints(const std::string& name) const {
    return std::get<std::vector<int64_t>>(values_.at(name));
  }
  const std::map<std::string, ParamValue>& values() const { return values_; }
  void Set(const std::string& name, ParamValue value) { values_[name] = std::move(value); }

 private:
  std::map<std::string, ParamValue> values_;
};

// Megatron's --recompute-modules (selective recomputation by module): the
// parts of each repeated layer whose forward is recomputed before the
// backward instead of keeping what they produce.
enum class RecomputeModule {
  kCoreAttention,    // core_attn: the eager attention core (scores, mask, softmax, context), as select_recompute
  kMlaUpProjection,  // mla_up_proj: latent attention's up-projections to queries, keys and values, rotary parts too
  kLayerNorm,        // layernorm: the norms before the attention and before the MLP
  kMlp,              // mlp: a dense layer's MLP (not a mixture-of-experts layer's)
  kMoe,              // moe: a mixture-of-experts layer's compute whole (its token exchanges not repeated)
  kMoeActivation,    // moe_act: the experts' activation (and its gating product)
  kSharedExperts,    // shared_experts: the shared experts' MLP
};

const char* ToString(RecomputeModule module);
// Megatron's names, in the enum's order.
const std::vector<std::string>& RecomputeModuleNames();
// "mla_up_proj" -> kMlaUpProjection; throws std::invalid_argument for other names.
RecomputeModule ParseRecomputeModule(const std::string& name);

// Settings of the run the model is built for, rather than of the model.
struct BuildOptions {
  int64_t pipeline_stages = 1;    // layers are assigned to stages evenly, unless a builder's offset says otherwise
  bool recompute = false;         // mark the repeated layers' forward for recomputation
  bool select_recompute = false;  // mark only the attention core (when `recompute` is off)
  std::vector<RecomputeModule> recompute_modules;  // mark these parts (when `recompute` is off)
  // The model's end (final norm, head, loss) on the first stage, not the
  // last: zero_bubble_v's V comes back to stage 0, which runs its last arm.
  bool head_on_first_stage = false;
  // Mark the first this many repeated layers of each stage to offload the
  // activations they keep to host memory (cpu_offloading_num_layers).
  int64_t offload_layers = 0;
};

struct ModelBuilder {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  Graph (*build)(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options);

  // The defaults of every parameter.
  BuilderParams Defaults() const;
};

const std::vector<ModelBuilder>& ModelBuilders();
const ModelBuilder* FindModelBuilder(const std::string& name);

// The builders, one file each under core/graph/builders/.
ModelBuilder GptBuilder();
ModelBuilder BertBuilder();
ModelBuilder ResNet50Builder();
ModelBuilder WideDeepBuilder();
ModelBuilder FfnBuilder();

// The stage of each of `layers` layers over `stages` pipeline stages. With
// an empty `offset` they are spread evenly (the first stages take one more
// when `stages` does not divide `layers`); otherwise as MindFormers' offset:
// stage i holds layers / stages + offset[i] layers, which must be at least
// one and add up to `layers` (throws GraphError naming the rule).
std::vector<int64_t> StagesOfLayers(int64_t layers, int64_t stages, const std::vector<int64_t>& offset);

// Which of the layers (placed by `stage_of`) offload their activations: the
// first `count` of each pipeline stage (BuildOptions::offload_layers). Each
// stage must keep at least one layer on the device, whose forward the last
// offloaded layer's copy runs beside (throws GraphError).
std::vector<bool> OffloadedLayers(const std::vector<int64_t>& stage_of, int64_t count);

}  // namespace shardlab
