#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/config/model_config.h"
#include "core/graph/graph_json.h"
#include "core/report/graph_summary.h"
#include "core/util/atomic_file.h"
#include "core/util/json_reader.h"

namespace shardlab::cli {

int GraphCommand(const GraphArgs& args) {
  const nlohmann::json document = ReadJsonFile(args.model_file);
  const JsonNode root(document, args.model_file);
  const ModelSpec model = ReadModelSpec(root);
  BuildOptions options;
  options.pipeline_stages = args.pipeline_stages;
  const Graph graph = BuildModelGraph(model, options, root);
  int64_t batch = 1;
  if (!model.builder.empty()) {
    batch = model.params.Int("batch");
  } else {
    for (const auto& t : graph.tensors())
      if (t.kind == TensorKind::kInput && !t.shape.empty()) {
        batch = t.shape.front();
        break;
      }
  }
  const GraphSummary summary = SummarizeGraph(graph, batch, SequenceChunks(model));
  if (args.json) {
    std::cout << ToJson(summary).dump(2) << "\n";
  } else {
    std::cout << FormatGraphSummary(summary);
  }
  if (!args.save_file.empty()) {
    const nlohmann::json saved = {{"name", model.name}, {"graph", GraphToJson(graph)}};
    WriteFileAtomically(args.save_file, saved.dump(1) + "\n");
  }
  return 0;
}

int Models() {
  for (const auto& builder : ModelBuilders()) {
    std::cout << fmt::format("{}: {}\n", builder.name, builder.description);
    for (const auto& spec : builder.params) {
      const std::string fallback = std::visit([](const auto& v) { return fmt::format("{}", v); }, spec.fallback);
      std::cout << fmt::format("  {:<26} default {:<10} {}\n", spec.name, fallback, spec.help);
    }
  }
  return 0;
}

}  // namespace shardlab::cli
