// What an engine reports for one simulated step: the step time and what it is
// made of (compute, communication, exposed communication, pipeline bubbles),
// throughput and MFU, memory per stage against capacity, the slowest stage and
// why, and the timeline events of one representative device per stage.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/plan/plan.h"

namespace shardlab {

struct TimelineEvent {
  int64_t stage = 0;
  std::string lane;  // "compute", "communication", "pipeline"
  std::string name;
  std::string category;  // forward, backward, recompute, gradient, optimizer, send, bubble
  int64_t micro_batch = -1;
  int64_t chunk = 0;
  double start = 0;
  double duration = 0;
  std::vector<int64_t> ranks;  // the devices it stands for; empty: the stage's representative
};

struct StageResult {
  int64_t stage = 0;
  double forward_seconds = 0;  // one micro-batch (all chunks)
  double backward_seconds = 0;
  double compute_seconds = 0;  // the whole step, per device
  double communication_seconds = 0;
  double exposed_communication_seconds = 0;
  double bubble_seconds = 0;
  double passes_end_seconds = 0;  // the last forward/backward pass ends here
  double end_seconds = 0;         // after the gradient tail and the optimizer
  MemoryBreakdown memory;
  bool out_of_memory = false;
};

struct StepResult {
  std::string engine;
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
  std::vector<TimelineEvent> events;
  double wall_seconds = 0;  // the engine's own run time
};

// Fills in step-derived figures (throughput, MFU, slowest stage, memory verdict).
void Finalize(const Plan& plan, StepResult& result);

// One stage's figures and one timeline event, and back (result.json and the
// real executor's rank reports use them).
nlohmann::json ToJson(const StageResult& stage);
StageResult StageResultFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const TimelineEvent& event);
TimelineEvent TimelineEventFromJson(const nlohmann::json& j);

// The result's figures, its stages and, when it has them, its timeline events.
nlohmann::json ToJson(const StepResult& result);
// Reads what ToJson writes (result.json's "result"); throws nlohmann's errors on a bad document.
StepResult StepResultFromJson(const nlohmann::json& j);
// Chrome/Perfetto trace: one process per stage, compute and communication on separate tracks.
nlohmann::json ChromeTrace(const StepResult& result);

}  // namespace shardlab
