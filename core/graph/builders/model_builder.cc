#include "core/graph/builders/model_builder.h"

namespace shardlab {

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

int64_t StageOfLayer(int64_t layer, int64_t layers, int64_t stages) { return layer * stages / layers; }

}  // namespace shardlab
