// `shardlab layout`, `redistribute` and `devices`: the layout engine's
// answers (core/ops/layout_queries.h) printed as JSON on stdout.
#include <iostream>

#include "cli/commands.h"
#include "core/ops/layout_queries.h"

namespace shardlab::cli {
namespace {

int Print(const nlohmann::json& answer) {
  std::cout << answer.dump(2) << "\n";
  return 0;
}

}  // namespace

int Layout(const LayoutArgs& args) { return Print(AnswerOpLayout(args)); }
int Redistribute(const RedistributeArgs& args) { return Print(AnswerRedistribution(args)); }
int Devices(const DevicesArgs& args) { return Print(AnswerDeviceGroups(args)); }

}  // namespace shardlab::cli
