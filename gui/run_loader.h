// What the GUI shows of a run file: the run simulated with the analytical
// engine (fast enough to redo on every edit), with its timeline events.
#pragma once

#include <string>

#include "core/config/run_config.h"
#include "core/report/step_result.h"

namespace shardlab::gui {

StepResult SimulateForView(const RunSpec& run);

}  // namespace shardlab::gui
