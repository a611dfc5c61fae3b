#include "sim/flow_runner.h"

#include <algorithm>
#include <cmath>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>

namespace shardlab::sim {

namespace sg4 = simgrid::s4u;

// What a communication's completion needs: its run, and its flow for the link usage.
struct FlowRunner::FlowRecord {
  Running* running;
  const Flow* flow;
  double start;
};

struct FlowRunner::Running {
  FlowRunner* runner;
  std::vector<Phase> phases;
  size_t phase = 0;
  int64_t pending = 0;
  std::function<void()> done;
  std::vector<sg4::CommPtr> comms;
  std::vector<FlowRecord> records;  // one per started communication of the phase
};

namespace {

// Finished communications are released one callback later: dropping the last
// reference inside the completion callback would free them too early.
std::vector<sg4::CommPtr>& Graveyard() {
  static std::vector<sg4::CommPtr> graveyard;
  return graveyard;
}

}  // namespace

FlowRunner::FlowRunner(ClusterPlatform& platform) : platform_(platform) {
  static bool connected = false;
  if (connected) return;
  connected = true;
  sg4::Activity::on_completion_cb([](const sg4::Activity& activity) {
    Graveyard().clear();
    const auto* record = activity.get_data<FlowRecord>();
    if (!record) return;
    Running* running = record->running;
    if (LinkUsageRecorder* recorder = running->runner->recorder_)
      recorder->AddFlow(record->flow->src, record->flow->dst, record->flow->bytes, record->start,
                        sg4::Engine::get_clock());
    if (--running->pending == 0) running->runner->PhaseFinished(running);
  });
}

FlowRunner::~FlowRunner() = default;

void FlowRunner::Run(std::vector<Phase> phases, std::function<void()> done) {
  phases.erase(std::remove_if(phases.begin(), phases.end(), [](const Phase& p) { return p.flows.empty(); }),
               phases.end());
  if (phases.empty()) {
    After(0, std::move(done));
    return;
  }
  auto* r = new Running{this, std::move(phases), 0, 0, std::move(done), {}, {}};
  StartPhase(r);
}

void FlowRunner::After(double seconds, std::function<void()> done) {
  simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock() + seconds, std::move(done));
}

void FlowRunner::StartPhase(Running* r) {
  const Phase& phase = r->phases[r->phase];
  r->pending = std::count_if(phase.flows.begin(), phase.flows.end(), [this](const Flow& f) { return Runs(f); });
  if (r->pending == 0) {
    PhaseFinished(r);
    return;
  }
  r->records.clear();
  r->records.reserve(static_cast<size_t>(r->pending));  // the communications point into it
  const double now = sg4::Engine::get_clock();
  for (const Flow& f : phase.flows) {
    if (!Runs(f)) continue;
    sg4::CommPtr comm = sg4::Comm::sendto_init(platform_.host(f.src), platform_.host(f.dst));
    // A zero-byte communication would never start; one byte stands for a pure synchronisation.
    comm->set_payload_size(static_cast<uint64_t>(std::max(1.0, std::round(f.bytes))));
    r->records.push_back({r, &f, now});
    comm->set_data(&r->records.back());
    r->comms.push_back(comm);
    comm->start();
    ++flows_started_;
  }
}

void FlowRunner::PhaseFinished(Running* r) {
  const Phase& phase = r->phases[r->phase];
  double extra = 0;
  if (phase.library_latency > 0 && !phase.flows.empty()) {
    // The library's latency less what the phase's flows already took on
    // their way: the farthest flow's route (an AlltoAll's between servers).
    double route = 0;
    for (const Flow& f : phase.flows) route = std::max(route, platform_.RouteLatency(f.src, f.dst));
    extra = std::max(0.0, phase.library_latency - route);
  }
  if (phase.extra_latency_steps > 0 && !phase.flows.empty())
    extra += static_cast<double>(phase.extra_latency_steps) *
             platform_.RouteLatency(phase.flows.front().src, phase.flows.front().dst);
  auto& graveyard = Graveyard();
  graveyard.insert(graveyard.end(), r->comms.begin(), r->comms.end());
  r->comms.clear();
  ++r->phase;
  auto next = [this, r] {
    if (r->phase < r->phases.size()) {
      StartPhase(r);
      return;
    }
    auto done = std::move(r->done);
    delete r;
    done();
  };
  if (extra > 0)
    After(extra, next);
  else
    next();
}

}  // namespace shardlab::sim
