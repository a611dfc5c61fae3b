// The console summary of a simulated step: time and throughput, MFU, where the
// time goes (compute, exposed communication, bubbles), memory per stage
// against capacity, and the slowest stage and why.
#pragma once

#include <string>

#include "core/config/run_config.h"
#include "core/ops/sharded_graph.h"
#include "core/plan/plan.h"
#include "core/report/step_result.h"

namespace shardlab {

std::string FormatStepReport(const RunSpec& run, const Plan& plan, const StepResult& result);

// One line: how the strategies were chosen ("searched by recursive_programming
// (mindspore cost model) in 0.74 s, 12 operators configured").
std::string FormatStrategyChoice(const StrategyChoice& choice);

}  // namespace shardlab
