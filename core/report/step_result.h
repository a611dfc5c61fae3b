// The figures of one step, computed from a Trace by `Summarize`, the one
// place that derives them for every engine and the real executor: the step
// time and what it is made of (compute, communication, exposed
// communication, pipeline bubbles), throughput and MFU, memory per stage
// against capacity, the slowest stage and why, and the trace's events.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/plan/plan.h"
#include "core/report/trace.h"

namespace shardlab {

struct Interval {
  double start = 0, end = 0;
  bool operator==(const Interval&) const = default;
};

// One parallel dimension's communication on a device over the step.
struct DimensionCommunication {
  CommDimension dimension = CommDimension::kTensor;
  double seconds = 0;          // busy time of its collectives
  double bytes = 0;            // what each device contributes, as the collectives count it (plan.h)
  double exposed_seconds = 0;  // not hidden behind compute (pipeline transfers: their wait is a bubble)
};

struct StageResult {
  int64_t stage = 0;
  double forward_seconds = 0;  // one micro-batch (all chunks)
  double backward_seconds = 0;
  double compute_seconds = 0;  // the whole step, per device
  double communication_seconds = 0;
  double exposed_communication_seconds = 0;
  double bubble_seconds = 0;
  // Idle compute-stream time from the end of the step-start weight gathers to
  // the last pass: the wait while the pipeline fills and the gaps between passes.
  std::vector<Interval> bubbles;
  double passes_end_seconds = 0;  // the last forward/backward pass ends here
  double end_seconds = 0;         // after the gradient tail and the optimizer
  MemoryBreakdown memory;
  bool out_of_memory = false;
  // communication_seconds and exposed_communication_seconds split by
  // dimension, in CommDimension order. Inside a pass the traced communication
  // is shared out as the pass's closed form splits it.
  std::vector<DimensionCommunication> communication;
};

struct StepResult {
  std::string engine;
  std::string engine_detail;  // Trace::detail
  double step_seconds = 0;
  double samples_per_second = 0;
  double tokens_per_second = 0;
  double tflops_per_device = 0;
  double mfu = 0;
  double compute_seconds = 0;  // of the slowest stage
  double communication_seconds = 0;
  double exposed_communication_seconds = 0;
  double bubble_seconds = 0;
  double bubble_fraction = 0;  // of the step, on the slowest stage
  int64_t slowest_stage = 0;
  std::string slowest_reason;
  bool out_of_memory = false;
  std::string memory_message;
  std::vector<StageResult> stages;
  std::vector<TraceEvent> events;
  std::vector<LinkClassUsage> link_usage;  // SimGrid: how busy each class of links was
  double wall_seconds = 0;                 // the engine's own run time
  int64_t simulated_devices = 0;           // Trace::simulated_devices (0: not counted)
};

// The step's figures from what an engine or the executor traced. Each
// stage's figures come from its representative device (global_rank on its
// stage, the first rank elsewhere: Plan::RepresentativeRank); the step ends
// when the slowest stage does.
StepResult Summarize(const Plan& plan, Trace trace);

nlohmann::json ToJson(const StageResult& stage);
StageResult StageResultFromJson(const nlohmann::json& j);

// The result's figures, its stages and, when it has them, its timeline events.
nlohmann::json ToJson(const StepResult& result);
// Reads what ToJson writes (result.json's "result"); throws nlohmann's errors on a bad document.
StepResult StepResultFromJson(const nlohmann::json& j);

}  // namespace shardlab
