// What an engine (analytical, SimGrid) or the real executor saw of one step:
// timeline events per stage on three lanes. Every engine returns a Trace;
// `Summarize` (core/report/step_result.h) turns it into the step's figures,
// once for all of them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/plan/pipeline_schedule.h"

namespace shardlab {

// Where an event runs on a device.
enum class Lane {
  kCompute,        // the compute stream: passes and the optimizer
  kCommunication,  // the communication stream: weight gathers and gradient buckets
  kPipeline,       // point-to-point transfers between neighbouring stages
};

// What an event is.
enum class EventKind {
  kForward,         // a forward pass of one micro-batch (one chunk when interleaved)
  kBackward,        // a backward pass (with its recomputed forward)
  kOptimizer,       // the optimizer update that closes the step
  kWeightGather,    // a parallel-optimizer weight AllGather before the first pass
  kGradient,        // a fused gradient bucket's collective
  kSend,            // activations or gradients sent to the neighbouring stage
  kReceive,         // waiting for them to arrive (measured by the real executor)
  kWeightGradient,  // a split backward's weight-gradient pass (zero-bubble schedules)
};

const char* ToString(Lane lane);
const char* ToString(EventKind kind);
// Inverse of ToString; throws std::invalid_argument naming the value.
Lane ParseLane(const std::string& name);
EventKind ParseEventKind(const std::string& name);

struct TraceEvent {
  int64_t stage = 0;
  Lane lane = Lane::kCompute;
  EventKind kind = EventKind::kForward;
  std::string name;
  int64_t micro_batch = -1;
  int64_t seq_chunk = 0;  // of the micro-batch's sequence, under sequence pipelining
  int64_t chunk = 0;
  double start = 0;
  double duration = 0;
  // Passes only: the compute stream's own work inside the pass and the
  // collectives inside it; the rest of the pass is communication it waited for.
  double compute = 0;
  double communication = 0;
  std::vector<int64_t> ranks;  // the devices it stands for; empty: the stage's representative

  bool IsPass() const {
    return kind == EventKind::kForward || kind == EventKind::kBackward || kind == EventKind::kWeightGradient;
  }
  double end() const { return start + duration; }
};

// An event with what every engine sets; micro-batch, chunk and the pass
// figures are filled in where they apply.
// The timeline kind of a schedule item's pass: forward, backward or weight gradient.
EventKind PassKind(const ScheduleItem& item);

TraceEvent MakeEvent(int64_t stage, Lane lane, EventKind kind, std::string name, double start = 0, double duration = 0,
                     std::vector<int64_t> ranks = {});

// How busy one class of links was over the step (SimGrid only): the
// NVSwitch ports, the NICs, the leaf or spine uplinks, the HCCS mesh.
struct LinkClassUsage {
  std::string name;                 // "NIC links"
  int64_t links = 0;                // links of the class in the simulated devices' fabric
  double bandwidth = 0;             // bytes/s of one such link (the class's mean)
  double bin_seconds = 0;           // the width of each utilisation sample
  std::vector<double> utilisation;  // bytes carried over capacity, per bin from the step's start, 0..1
  double mean_utilisation = 0;      // over the whole step
  double peak_utilisation = 0;      // the busiest bin
  std::string busiest;              // the link that carried the most for its capacity
  double busiest_utilisation = 0;   // its bytes over its capacity for the whole step
  // Every link of the class by its own utilisation over the step: how many
  // links fall in each tenth (0-10%, ..., 90-100%), so an uneven load (a hot
  // link among idle ones) shows beside the class's mean.
  std::vector<int64_t> links_by_utilisation;
};

struct Trace {
  std::string engine;  // analytical | simgrid | measured
  std::string detail;  // what the engine simulated, when it did not simulate every device alike
  std::vector<TraceEvent> events;
  std::vector<LinkClassUsage> link_usage;  // SimGrid: per link class with traffic
  double wall_seconds = 0;                 // the engine's own run time
  int64_t simulated_devices = 0;           // SimGrid: devices simulated (one per orbit of symmetric devices)
};

// The events of device `rank`, which stands for `stage`
// (Plan::RepresentativeRank), in start order; events with no ranks stand for
// every device of their stage.
std::vector<const TraceEvent*> RepresentativeEvents(const Trace& trace, int64_t stage, int64_t rank);

nlohmann::json ToJson(const LinkClassUsage& usage);
LinkClassUsage LinkClassUsageFromJson(const nlohmann::json& j);

nlohmann::json ToJson(const TraceEvent& event);
// Throws nlohmann's errors on a malformed event, std::invalid_argument on an unknown lane or kind.
TraceEvent TraceEventFromJson(const nlohmann::json& j);

// Chrome/Perfetto trace: one process per stage; per traced device (or lane of
// devices in lockstep) a compute, a communication and a pipeline track.
nlohmann::json ChromeTrace(const std::vector<TraceEvent>& events, int64_t stages);

}  // namespace shardlab
