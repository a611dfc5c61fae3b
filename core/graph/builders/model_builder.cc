#include "core/graph/builders/model_builder.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/util/enum_names.h"

namespace shardlab {
namespace {

constexpr EnumNames<RecomputeModule, 7> kRecomputeModules({"core_attn", "mla_up_proj", "layernorm", "mlp", "moe",
                                                           "moe_act", "shared_experts"});

}  // namespace

const char* ToString(RecomputeModule module) { return kRecomputeModules[module]; }

const std::vector<std::string>& RecomputeModuleNames() {
  static const std::vector<std::string> names = kRecomputeModules.All();
  return names;
}

RecomputeModule ParseRecomputeModule(const std::string& name) {
  return kRecomputeModules.Parse(name, "recompute module");
}

BuilderParams ModelBuilder::Defaults() const {
  BuilderParams out;
  for (const auto& spec : params) out.Set(spec.name, spec.fallback);
  return out;
}

const std::vector<ModelBuilder>& ModelBuilders() {
  static const std::vector<ModelBuilder> builders = {GptBuilder(), BertBuilder(), ResNet50Builder(), WideDeepBuilder(),
                                                     FfnBuilder()};
  return builders;
}

const ModelBuilder* FindModelBuilder(const std::string& name) {
  for (const auto& builder : ModelBuilders())
    if (builder.name == name) return &builder;
  return nullptr;
}

std::vector<int64_t> StagesOfLayers(int64_t layers, int64_t stages, const std::vector<int64_t>& offset) {
  if (layers < stages)
    throw GraphError("layers " + std::to_string(layers) + " cannot fill pipeline_stages " + std::to_string(stages));
  std::vector<int64_t> stage_of(layers);
  if (offset.empty()) {
    for (int64_t layer = 0; layer < layers; ++layer) stage_of[layer] = layer * stages / layers;
    return stage_of;
  }
  if (static_cast<int64_t>(offset.size()) != stages)
    throw GraphError(fmt::format("offset has {} entries but there are {} pipeline stages", offset.size(), stages));
  int64_t total = 0;
  for (int64_t s = 0; s < stages; ++s) {
    const int64_t count = layers / stages + offset[s];
    if (count < 1)
      throw GraphError(fmt::format("offset {} leaves pipeline stage {} with {} layers ({} / {} + {})", offset[s], s,
                                   count, layers, stages, offset[s]));
    total += count;
  }
  if (total != layers)
    throw GraphError(
        fmt::format("offset [{}] places {} layers on the {} stages, but the model has {}: the offsets "
                    "must add up to {} ({} % {})",
                    fmt::join(offset, ", "), total, stages, layers, layers % stages, layers, stages));
  int64_t layer = 0;
  for (int64_t s = 0; s < stages; ++s)
    for (int64_t i = 0; i < layers / stages + offset[s]; ++i) stage_of[layer++] = s;
  return stage_of;
}

std::vector<bool> OffloadedLayers(const std::vector<int64_t>& stage_of, int64_t count) {
  std::vector<bool> offloaded(stage_of.size(), false);
  if (count == 0) return offloaded;
  std::map<int64_t, int64_t> seen;  // layers met so far per stage
  for (size_t layer = 0; layer < stage_of.size(); ++layer) offloaded[layer] = seen[stage_of[layer]]++ < count;
  for (const auto& [stage, layers] : seen)
    if (layers <= count)
      throw GraphError(fmt::format("cpu_offloading_num_layers {} offloads every layer of pipeline stage {} ({} "
                                   "layers): each stage keeps at least its last layer on the device",
                                   count, stage, layers));
  return offloaded;
}

}  // namespace shardlab
