// What the GUI shows of a run: the run itself, its step simulated with the
// analytical engine (fast enough to redo on every edit) or read from a
// result.json, every operator's strategy and layouts, and where each
// operator's tasks sit inside a pass (for clicking a task in the timeline).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/run_config.h"
#include "core/report/step_result.h"
#include "gui/layout_model.h"
#include "gui/pipeline_timeline.h"
#include "gui/strategy_view.h"

namespace shardlab::gui {

struct RunView {
  RunSpec run;
  std::string source;        // the file opened ("" for an edited run)
  bool from_result = false;  // figures and timeline read from a result.json
  StepResult result;
  std::vector<StrategyRow> strategies;
  RunLayouts layouts;
  PipelineTimeline timeline;
};

// The run's strategies (searched when its parallel_mode is auto_parallel),
// simulated analytically with events.
RunView SimulateForView(const RunSpec& run);

// A run file, or a result.json written by `shardlab simulate --out` (its
// "run" and "result"; the timeline from the file's events when it has them).
RunView LoadForView(const std::string& path);

// The run with its parallel, simulation and stack sections replaced where
// given ({"parallel": {...}, "stack": {...}}) and, when
// given, its model or cluster read from another file ({"model": "path"}),
// checked as a run file is (errors name the key).
RunSpec EditRun(const RunSpec& run, const nlohmann::json& changes);

// A simulation's view as a document ({"run", "result", "strategies"}: one
// strategy per operator) and back: how a simulation in a child process hands
// its view to the window without the window searching again. A result.json
// of `shardlab simulate` is such a document (older ones without "strategies"
// get the run's own choice).
nlohmann::json SimulateDocument(const RunSpec& run, Engine engine);
RunView ViewFromResultDocument(const nlohmann::json& doc, const std::string& source);

}  // namespace shardlab::gui
