// What the GUI shows of a run file: the run simulated with the analytical
// engine (fast enough to redo on every edit), with its timeline events, and
// every operator's strategy.
#pragma once

#include <string>
#include <vector>

#include "core/config/run_config.h"
#include "core/report/step_result.h"
#include "gui/strategy_view.h"

namespace shardlab::gui {

struct RunView {
  StepResult result;
  std::vector<StrategyRow> strategies;
};

RunView SimulateForView(const RunSpec& run);

}  // namespace shardlab::gui
