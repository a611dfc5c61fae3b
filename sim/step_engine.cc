#include "sim/step_engine.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <simgrid/s4u/Engine.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/plan/overlapped_unit.h"
#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"
#include "core/plan/stage_passes.h"
#include "core/util/engine_limit_error.h"
#include "core/util/progress_report.h"
#include "sim/cluster_platform.h"
#include "sim/flow_runner.h"
#include "sim/group_instances.h"
#include "sim/link_usage.h"
#include "sim/step_symmetry.h"

namespace shardlab::sim {
namespace {

namespace sg4 = simgrid::s4u;

double Now() { return sg4::Engine::get_clock(); }

struct StagePrograms {
  explicit StagePrograms(const Plan& plan, const StageProgram& stage, int64_t chunks)
      : order(StageOrder(plan, stage.stage)), passes(stage, chunks, plan.seq_chunks, plan.overlap_forward_backward) {}
  std::vector<ScheduleItem> order;
  StagePasses passes;  // each pass's steps per chunk; units of overlapped passes
  // Per order item: the last item of its micro-batch and chunk of the pass
  // that completes gradients (its backward, or its weight-gradient pass when
  // split), after which the chunk's are complete; and each chunk's last.
  FinalGradientPasses finals;
  // How much longer a chunk's final backward computes beside the buckets it
  // readies (BucketContentionSeconds), per chunk: its last of the step, its
  // other micro-batches'.
  std::vector<double> last_contention, other_contention;
  std::vector<int64_t> bucket_chunk;  // per gradient bucket (BucketChunks)
  std::vector<bool> bucket_ready;     // per task of the gradient pass (BucketReadyTasks)

  // Per group spec: the representatives in each instance, whose arrivals
  // start it (every member when nothing is folded).
  std::vector<std::vector<int32_t>> arrivals;
};

// Lanes: devices of one server that take part in the same blocking
// collectives inside the server run in lockstep, so they are simulated once,
// those collectives in closed form (the server's fabric is private to them).
// The union of the passes' in-server collective groups; local indices per lane.
std::vector<std::vector<int64_t>> Lanes(const Plan& plan, const StageProgram& stage,
                                        const std::vector<GroupInstances>& groups, int64_t devices_per_server) {
  const int64_t n = stage.devices;
  std::vector<int64_t> parent(n);
  for (int64_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&parent](int64_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // The passes decide lockstep; step-start gathers and gradient buckets run
  // per device across lanes.
  std::set<int> specs;
  for (const auto* tasks : {&stage.forward, &stage.backward, &stage.weight_gradient})
    for (const Task& t : *tasks)
      if (t.kind == Task::Kind::kCollective) specs.insert(t.group);
  // A group that spans servers does not bind its members into one lane: its
  // collective runs as flows per device, and the lane waits for all of its
  // devices' groups.
  for (int spec : specs)
    for (const auto& members : groups[spec].members) {
      const int64_t server = members.front() / devices_per_server;
      if (std::any_of(members.begin(), members.end(), [&](int64_t m) { return m / devices_per_server != server; }))
        continue;
      for (int64_t m : members) parent[find(plan.placement.LocalOf(m))] = find(plan.placement.LocalOf(members.front()));
    }
  // Passes without any collective (data parallel: every device on its own
  // batch) run the same program alone on every device: a server's devices
  // keep lockstep without meeting, so they form one lane.
  if (specs.empty()) {
    std::map<int64_t, int64_t> first_on_server;  // server: the stage's first device there
    for (int64_t l = 0; l < n; ++l) {
      const int64_t first = first_on_server.emplace(plan.Rank(stage.stage, l) / devices_per_server, l).first->second;
      parent[find(l)] = find(first);
    }
  }
  std::map<int64_t, std::vector<int64_t>> classes;
  for (int64_t l = 0; l < n; ++l) classes[find(l)].push_back(l);
  std::vector<std::vector<int64_t>> lanes;
  for (auto& [root, members] : classes) lanes.push_back(std::move(members));
  return lanes;
}

class Engine {
 public:
  Engine(const Plan& plan, const ClusterSpec& cluster, Fidelity fidelity, Symmetry symmetry, const TraceRequest& trace)
      : plan_(plan),
        cluster_(cluster),
        fidelity_(fidelity),
        platform_(cluster, plan.devices),
        runner_(platform_),
        record_link_usage_(trace.enabled) {
    CheckPlacement(plan);
    S_ = static_cast<int64_t>(plan.stages.size());
    M_ = plan.micro_batches;
    V_ = RunsChunks(plan.schedule) ? plan.chunks : 1;
    shape_.plan = &plan;
    shape_.devices_per_server = cluster.devices_per_server;
    shape_.fidelity = fidelity;
    shape_.lane_of_rank.resize(plan.devices);
    std::vector<std::vector<std::vector<int64_t>>> lanes;  // per stage, local indices
    for (const StageProgram& stage : plan.stages) {
      StagePrograms p(plan, stage, V_);
      p.bucket_ready = BucketReadyTasks(stage);
      p.finals = FindFinalGradientPasses(plan, stage, p.order);
      for (int64_t c = 0; plan.training && c < V_; ++c) {
        p.last_contention.push_back(BucketContentionSeconds(stage, V_, true, c));
        p.other_contention.push_back(BucketContentionSeconds(stage, V_, false, c));
      }
      p.bucket_chunk = BucketChunks(stage, V_);
      programs_.push_back(std::move(p));
      shape_.groups.push_back(StageGroupInstances(plan, stage));
      lanes.push_back(Lanes(plan, stage, shape_.groups.back(), cluster.devices_per_server));
      for (const auto& members : lanes.back()) {
        for (int64_t m : members)
          shape_.lane_of_rank[plan.Rank(stage.stage, m)] = static_cast<int64_t>(shape_.lane_size.size());
        shape_.lane_size.push_back(static_cast<int64_t>(members.size()));
      }
    }
    symmetry_ = symmetry == Symmetry::kFold ? FindStepSymmetry(shape_, platform_)
                                            : NoSymmetry(plan.devices, "every device simulated: symmetry is off");
    if (symmetry_.order > 1) {
      platform_.Fold(symmetry_.generators, symmetry_.order);
      std::vector<char> representative(plan.devices);
      for (int64_t r = 0; r < plan.devices; ++r) representative[r] = symmetry_.IsRepresentative(r);
      runner_.KeepFlowsFrom(std::move(representative));
    }
    for (int64_t s = 0; s < S_; ++s)
      for (const GroupInstances& groups : shape_.groups[s]) {
        std::vector<int32_t> arrivals;
        for (const auto& members : groups.members)
          arrivals.push_back(static_cast<int32_t>(std::count_if(
              members.begin(), members.end(), [this](int64_t r) { return symmetry_.IsRepresentative(r); })));
        programs_[s].arrivals.push_back(std::move(arrivals));
      }
    lane_of_rank_.assign(plan.devices, -1);
    for (int64_t s = 0; s < S_; ++s) {
      for (const auto& members : lanes[s]) {
        Device d;
        d.stage = s;
        for (int64_t m : members)
          if (symmetry_.IsRepresentative(plan.Rank(s, m))) d.ranks.push_back(plan.Rank(s, m));
        if (d.ranks.empty()) continue;  // simulated by its orbit's representatives
        d.rank = d.ranks.front();
        d.local = plan.placement.LocalOf(d.rank);
        d.counters.assign(plan.stages[s].groups.size(), 0);
        d.prefetch_counters.assign(plan.stages[s].groups.size(), 0);
        for (const GroupInstances& groups : shape_.groups[s])
          d.inside_lane.push_back(shape_.InsideLane(groups.MembersOf(d.local)));
        d.closed_passes = true;
        for (const auto* tasks : {&plan.stages[s].forward, &plan.stages[s].backward, &plan.stages[s].weight_gradient})
          for (const Task& t : *tasks)
            if (t.kind == Task::Kind::kCollective) d.closed_passes = d.closed_passes && d.inside_lane[t.group];
        for (int64_t r : d.ranks) lane_of_rank_[r] = static_cast<int64_t>(devices_.size());
        d.event_ranks = d.ranks;
        devices_.push_back(std::move(d));
      }
    }
    // The stage's representative is always traced: Summarize reads the
    // stage's figures from it. A traced device that is folded into another's
    // orbit is traced by the lane that simulates it; the lane's events stand for it.
    std::vector<int64_t> traced;
    for (int64_t s = 0; s < S_; ++s) traced.push_back(plan.RepresentativeRank(s));
    if (trace.enabled && !trace.ranks.empty()) traced.insert(traced.end(), trace.ranks.begin(), trace.ranks.end());
    if (trace.enabled && trace.ranks.empty() && plan.devices <= 64)
      for (int64_t r = 0; r < plan.devices; ++r) traced.push_back(r);
    for (int64_t r : traced) {
      Device& d = devices_[LaneStandingFor(r)];
      d.traced = true;
      d.event_ranks.push_back(r);
    }
    CheckWork();
    for (Device& d : devices_) {
      std::sort(d.event_ranks.begin(), d.event_ranks.end());
      d.event_ranks.erase(std::unique(d.event_ranks.begin(), d.event_ranks.end()), d.event_ranks.end());
    }
  }

  // The index of the device (lane) that simulates `rank`: its own lane, or
  // its orbit's representative's.
  int64_t LaneStandingFor(int64_t rank) const { return lane_of_rank_[symmetry_.representative[rank]]; }

  // Refuses a step whose simulated devices would take more than
  // kMaxSimGridSeconds, before any of it runs (EstimateSimGridSeconds).
  void CheckWork() const {
    int64_t transfers = 0, alltoall_flows = 0, steps = 0, devices = 0;
    for (const Device& d : devices_) {
      const StagePrograms& p = programs_[d.stage];
      for (const ScheduleItem& item : p.order) {
        const auto& pass = p.passes.Steps(item);
        steps += d.closed_passes ? 1 : static_cast<int64_t>(pass.size());
        if (!d.closed_passes) alltoall_flows += AllToAllFlows(d, StageOf(d).PassTasks(item), pass);
      }
      transfers += static_cast<int64_t>(d.ranks.size()) *
                   std::count_if(p.order.begin(), p.order.end(), [](const ScheduleItem& i) { return i.Exchanges(); });
      devices += static_cast<int64_t>(d.ranks.size());
    }
    const double seconds = EstimateSimGridSeconds(transfers, alltoall_flows, steps, devices);
    if (seconds <= kMaxSimGridSeconds) return;
    throw EngineLimitError(fmt::format(
        "this step would take about {:.0f} s on SimGrid ({} of {} devices simulated, the others symmetric to them: "
        "{} pipeline transfers, {} AlltoAll flows, {} pass steps), more than its limit of {:.0f} s: use fewer "
        "devices or micro-batches, a layout whose devices are symmetric, or --engine analytical",
        seconds, devices, plan_.devices, transfers, alltoall_flows, steps, kMaxSimGridSeconds));
  }

  Trace Run(SimGridStats* stats) {
    // Progress: schedule items (passes) finished over every simulated device's.
    for (const Device& d : devices_) items_total_ += static_cast<double>(programs_[d.stage].order.size());
    LinkUsageRecorder usage(platform_);
    if (record_link_usage_) runner_.RecordLinkUsage(&usage);
    struct StopRecording {
      FlowRunner& runner;
      ~StopRecording() { runner.RecordLinkUsage(nullptr); }  // also when the run throws
    } stop_recording{runner_};
    for (auto& d : devices_) StartStep(d);
    platform_.engine().run();
    for (const Device& d : devices_)
      if (!d.finished || d.start_task != StageOf(d).step_start.size())
        throw std::logic_error("the simulated step did not finish on every device");
    Trace trace;
    trace.engine = "simgrid";
    trace.detail = symmetry_.description;
    trace.simulated_devices = symmetry_.simulated_devices();
    if (record_link_usage_) trace.link_usage = usage.Result(Now());
    trace.events = std::move(events_);
    if (stats) {
      stats->flows = runner_.flows_started();
      stats->collectives = collectives_;
      stats->timers = timers_;
    }
    return trace;
  }

 private:
  // A lane: one device, or the devices of one server that run in lockstep;
  // when symmetric devices are folded, their representatives.
  struct Device {
    int64_t rank = 0, stage = 0, local = 0;  // of its first device
    std::vector<int64_t> ranks;
    bool traced = false;               // its passes go on the timeline
    bool closed_passes = false;        // every collective of its passes runs inside the lane
    std::vector<char> inside_lane;     // per group spec: its group lies inside the lane (closed form)
    std::vector<int64_t> event_ranks;  // the devices its events stand for
    size_t start_task = 0;             // step_start collectives done
    size_t item = 0;
    size_t unit_end = 0;  // the running unit: items [item, unit_end) of the order
    // The running unit's steps and the tasks they index (a single item's
    // pass, or the merged steps of overlapped passes), and the latter.
    const std::vector<PassStep>* steps = nullptr;
    const std::vector<Task>* tasks = nullptr;
    const UnitPass* unit = nullptr;
    size_t step = 0;
    double pass_start = 0;
    std::vector<int64_t> counters;  // collectives issued per group spec
    // For the link usage: the bytes on each link of a collective inside the
    // lane, and of a closed-form pass (by its steps), which run as timers.
    std::map<std::tuple<int, int, int, double, double>, ClosedFormTraffic> task_traffic;
    std::map<const std::vector<PassStep>*, ClosedFormTraffic> pass_traffic;  // by the pass's steps
    // Gradient buckets on the communication stream: the runs queued by the
    // micro-batches whose final backward item has started, in order.
    struct BucketRun {
      int64_t micro_batch = 0;
      size_t bucket = 0;
      size_t pass = 0;    // which final backward item queued it
      bool last = false;  // queued by the step's last backward
    };
    std::deque<BucketRun> bucket_runs;
    bool bucket_running = false;
    size_t final_backwards = 0;  // final backward items started
    bool in_final_backward = false;
    int backward_task_done = -1;  // in the running final backward item
    int final_tasks_end = 0;      // the end of its chunk's tasks: the gradients after it came before
    // dualpipe's exchange with the mirror stage: started, its own transfers
    // still running, the mirror lane's received.
    int64_t sends_running = 0;  // blocking pipeline sends (StageProgram::blocking_sends) not yet ended
    bool mirror_started = false;
    int64_t mirror_sends_running = 0, mirror_received = 0;
    double mirror_begin = 0;
    bool compute_done = false;
    bool finished = false;
    // The running pass's compute and collectives, for its timeline event.
    double pass_compute = 0, pass_communication = 0;
    double contention = 0;  // still to add to the running pass (GatherContentionSeconds, BucketContentionSeconds)
    CopyStream copies;  // the device's copy engine (activation offloading)
    // The prefetch stream (weight gathers ahead of use, Task::prefetch):
    // the running pass's prefetches queued with their sequence numbers,
    // how many have ended, which steps have issued theirs, and whether a
    // step (or the pass's end) waits for them. Closed passes keep it in
    // closed form.
    std::deque<std::pair<int, int64_t>> prefetch_queue;
    bool prefetch_running = false;
    int prefetches_done = 0;
    size_t prefetches_issued_through = 0;  // steps [0, this) have queued theirs
    bool waits_for_prefetches = false;
    std::vector<int64_t> prefetch_counters;  // prefetches issued per group spec
    PrefetchStream closed_prefetches;
  };

  static TraceEvent Event(const Device& d, Lane lane, EventKind kind, std::string name, double start, double duration) {
    return MakeEvent(d.stage, lane, kind, std::move(name), start, duration, d.event_ranks);
  }

  struct Barrier {
    int64_t arrived = 0;
    std::vector<std::function<void()>> resumes;
  };

  const StageProgram& StageOf(const Device& d) const { return plan_.stages[d.stage]; }

  // The flows its passes' AlltoAlls start from the lane's devices
  // (AllToAllFlowsPerMember).
  int64_t AllToAllFlows(const Device& d, const std::vector<Task>& tasks, const std::vector<PassStep>& pass) const {
    int64_t flows = 0;
    for (const PassStep& step : pass)
      for (int t : step.collectives) {
        const Task& task = tasks[t];
        if (task.collective != shardlab::Collective::kAllToAll || d.inside_lane[task.group]) continue;
        const auto& members = shape_.groups[d.stage][task.group].MembersOf(d.local);
        flows += static_cast<int64_t>(d.ranks.size()) *
                 AllToAllFlowsPerMember(task.algorithm, members, shape_.devices_per_server);
      }
    return flows;
  }

  // The step-start weight gathers run one after another as flows. The first
  // forward waits for them all, or, where they overlap it (Megatron's
  // --overlap-param-gather), starts when the closed form says every gather
  // ends before its weights are used; the gathers still load the links.
  void StartStep(Device& d) {
    const StageProgram& stage = StageOf(d);
    if (!stage.GathersOverlapForward()) {
      GatherWeights(d, [this, &d] { Next(d); });
      return;
    }
    GatherWeights(d, [] {});
    ++timers_;
    runner_.After(stage.FirstForwardStart(), [this, &d] { Next(d); });
  }

  void GatherWeights(Device& d, std::function<void()> then) {
    if (d.start_task == StageOf(d).step_start.size()) {
      then();
      return;
    }
    const Task& t = StageOf(d).step_start[d.start_task];
    const double begin = Now();
    // Numbered apart from the group's other collectives, which an overlapped
    // forward may start in between.
    const auto sequence = -1 - static_cast<int64_t>(d.start_task);
    Collective(
        d, t,
        [this, &d, &t, begin, then = std::move(then)]() mutable {
          if (d.traced)
            events_.push_back(Event(d, Lane::kCommunication, EventKind::kWeightGather, t.name, begin, Now() - begin));
          ++d.start_task;
          GatherWeights(d, std::move(then));
        },
        sequence);
  }

  // Key of a pass input: (device, forward?, virtual stage, micro-batch).
  using InputKey = std::tuple<int64_t, bool, int64_t, int64_t>;

  bool NeedsInput(const Device& d, const ScheduleItem& item) const {
    if (!item.Exchanges()) return false;  // a weight-gradient pass follows its own backward
    const int64_t vs = VirtualStage(plan_.schedule, item.chunk, d.stage, S_);
    return AdjacentVirtualStage(plan_.schedule, !item.forward, vs, S_, V_).has_value();
  }

  // Runs the device's next unit (a pass, or overlapped passes) once its inputs have arrived.
  void Next(Device& d) {
    StagePrograms& p = programs_[d.stage];
    if (d.item == p.order.size()) {
      d.compute_done = true;
      MaybeStartBucket(d);
      MaybeFinish(d);
      return;
    }
    const size_t end = UnitEnd(p.order, d.item);
    std::vector<InputKey> inputs;
    for (size_t k = d.item; k < end; ++k) {
      const ScheduleItem& item = p.order[k];
      if (!NeedsInput(d, item)) continue;
      const InputKey key{d.rank, item.forward, VirtualStage(plan_.schedule, item.chunk, d.stage, S_), item.micro_batch};
      auto it = arrived_.find(key);
      if (it == arrived_.end() || it->second < static_cast<int64_t>(d.ranks.size())) {
        waiting_[key] = &d;
        return;
      }
      inputs.push_back(key);
    }
    for (const InputKey& key : inputs) arrived_.erase(key);
    const ScheduleItem& item = p.order[d.item];
    d.unit_end = end;
    if (end - d.item == 1) {
      d.steps = &p.passes.Steps(item);
      d.tasks = &StageOf(d).PassTasks(item);
      d.unit = nullptr;
    } else {
      const std::vector<ScheduleItem> items(p.order.begin() + static_cast<std::ptrdiff_t>(d.item),
                                            p.order.begin() + static_cast<std::ptrdiff_t>(end));
      d.unit = &p.passes.Unit(items);
      d.steps = &d.unit->steps;
      d.tasks = &p.passes.UnitTasks();
    }
    d.step = 0;
    d.pass_start = Now();
    d.pass_compute = d.pass_communication = 0;
    d.prefetches_done = 0;
    d.prefetches_issued_through = 0;
    d.closed_prefetches = {};
    // The compute the collectives beside the pass hold back: the step-start
    // gathers beside the first forward, the buckets beside a final backward.
    d.contention = d.item == 0 && !d.unit ? StageOf(d).GatherContentionSeconds() : 0.0;
    if (plan_.training && !d.unit && p.finals.is_final[d.item]) {
      const bool last = p.finals.is_chunk_last[d.item];
      QueueBuckets(d, item, last);
      d.contention += (last ? p.last_contention : p.other_contention)[static_cast<size_t>(item.chunk)];
    }
    RunStep(d);
  }

  // A step's compute (a timer) and its collectives (one after another) start
  // together; the pass goes on when both are done.
  void RunStep(Device& d) {
    const ScheduleItem& item = programs_[d.stage].order[d.item];
    const std::vector<PassStep>& steps = *d.steps;
    if (d.step == steps.size()) {
      // The pass ends with its last host copy and its last prefetch.
      const double drain = std::max(d.copies.Drain(Now()), d.closed_prefetches.Drain(Now()));
      if (drain > 0) {
        ++timers_;
        runner_.After(drain, [this, &d] { RunStep(d); });
        return;
      }
      if (d.prefetch_running || !d.prefetch_queue.empty()) {
        d.waits_for_prefetches = true;
        return;
      }
      if (d.contention > 0) {
        // The compute the gathers or buckets beside it held back.
        d.pass_compute += d.contention;
        ++timers_;
        runner_.After(std::exchange(d.contention, 0.0), [this, &d] { RunStep(d); });
        return;
      }
      EndUnit(d);
      return;
    }
    const std::vector<Task>& tasks = *d.tasks;
    if (d.closed_passes) {
      RunClosedSteps(d, item, steps, tasks);
      return;
    }
    const PassStep& step = steps[d.step];
    if (d.prefetches_issued_through <= d.step) {
      d.prefetches_issued_through = d.step + 1;
      // Below the step-start gathers' numbers (-1 and down), which may still run.
      const auto below = -1 - static_cast<int64_t>(StageOf(d).step_start.size());
      for (int t : step.prefetches) d.prefetch_queue.push_back({t, below - d.prefetch_counters[tasks[t].group]++});
      RunPrefetches(d, tasks);
    }
    if (d.prefetches_done < step.prefetches_needed) {
      d.waits_for_prefetches = true;
      return;
    }
    if (step.waits_for_copies && d.copies.Drain(Now()) > 0) {
      ++timers_;
      runner_.After(d.copies.Drain(Now()), [this, &d] { RunStep(d); });
      return;
    }
    d.copies.Start(step, Now());
    const bool has_compute = step.compute_seconds > 0 || step.collectives.empty();
    auto pending = std::make_shared<int>(has_compute + !step.collectives.empty());
    auto done = [this, &d, item, &step, pending] {
      if (--*pending > 0) return;
      AfterStep(d, item, step);
      ++d.step;
      RunStep(d);
    };
    if (has_compute) {
      ++timers_;
      const double compute = step.ComputeEndSeconds(tasks);
      d.pass_compute += compute;
      runner_.After(compute, done);
      MarkReadyGradients(d, item, step, tasks, 0);
    }
    if (!step.collectives.empty()) RunCollectives(d, tasks, step.collectives, 0, Now(), done);
  }

  // A lane whose passes only meet inside the lane runs them in closed form:
  // the steps to the pass's end as one timer, and a timer for each moment a
  // gradient bucket becomes ready in a final backward. Nothing outside the
  // lane can change how long they take.
  void RunClosedSteps(Device& d, const ScheduleItem& item, const std::vector<PassStep>& steps,
                      const std::vector<Task>& tasks) {
    double seconds = 0;
    size_t end = d.step;
    while (end < steps.size()) {
      const PassStep& step = steps[end++];
      d.closed_prefetches.Issue(step, tasks, Now() + seconds);
      seconds += d.closed_prefetches.Wait(step, Now() + seconds);
      d.pass_communication += step.PrefetchSeconds(tasks);
      seconds += d.copies.Start(step, Now() + seconds);
      MarkReadyGradients(d, item, step, tasks, seconds);
      seconds += step.ClosedFormSeconds(tasks);
      d.pass_compute += step.ComputeEndSeconds(tasks);
      d.pass_communication += step.CommunicationSeconds(tasks);
    }
    ++timers_;
    runner_.After(seconds, [this, &d, item, &step = steps[end - 1], end] {
      AfterStep(d, item, step);
      d.step = end;
      RunStep(d);
    });
  }

  // The prefetch stream: the next queued prefetch starts when the one
  // before it ends; a step waiting for prefetches tries again as each ends.
  // Prefetches number their collectives apart from the other collectives of
  // their group (negative sequence numbers below the step-start gathers'):
  // they start when the stream frees, not in the pass's order.
  void RunPrefetches(Device& d, const std::vector<Task>& tasks) {
    if (d.prefetch_running || d.prefetch_queue.empty()) return;
    const auto [t, sequence] = d.prefetch_queue.front();
    d.prefetch_queue.pop_front();
    d.prefetch_running = true;
    const double begin = Now();
    Collective(
        d, tasks[t],
        [this, &d, &tasks, begin] {
          d.prefetch_running = false;
          ++d.prefetches_done;
          d.pass_communication += Now() - begin;
          RunPrefetches(d, tasks);
          if (d.waits_for_prefetches) {
            d.waits_for_prefetches = false;
            RunStep(d);
          }
        },
        sequence);
  }

  void RunCollectives(Device& d, const std::vector<Task>& tasks, const std::vector<int>& collectives, size_t i,
                      double begin, const std::function<void()>& done) {
    if (i == collectives.size()) {
      d.pass_communication += Now() - begin;
      done();
      return;
    }
    Collective(d, tasks[collectives[i]], [this, &d, &tasks, &collectives, i, begin, done] {
      RunCollectives(d, tasks, collectives, i + 1, begin, done);
    });
  }

  // A chunk's final backward item of a micro-batch queues the chunk's
  // gradient buckets: every one after the chunk's last, the
  // every-micro-batch ones after the others.
  void QueueBuckets(Device& d, const ScheduleItem& item, bool last) {
    ++d.final_backwards;
    d.in_final_backward = true;
    // The pass runs its chunk's tasks of the gradient pass: the others' gradients ran in other passes.
    const auto [begin, end] = ChunkTaskRange(StageOf(d).GradientTasks(), V_, item.chunk, true);
    d.backward_task_done = static_cast<int>(begin) - 1;
    d.final_tasks_end = static_cast<int>(end);
    const auto& buckets = StageOf(d).buckets;
    const std::vector<int64_t>& chunk_of = programs_[d.stage].bucket_chunk;
    for (size_t b = 0; b < buckets.size(); ++b)
      if (chunk_of[b] == item.chunk && (last || buckets[b].every_micro_batch))
        d.bucket_runs.push_back({plan_.MicroBatchOf(item), b, d.final_backwards - 1, last});
    MaybeStartBucket(d);  // a split backward's buckets whose gradients all came with its input-gradient pass
  }

  // In a final backward, a compute task that completes a gradient bucket's
  // gradients may end before its step does (PassStep::TaskDoneSeconds): the
  // bucket may start then, `after` seconds from now plus that (a moment
  // at the step's end repeats AfterStep's, harmlessly).
  void MarkReadyGradients(Device& d, const ScheduleItem& item, const PassStep& step, const std::vector<Task>& tasks,
                          double after) {
    if (d.unit || item.forward || !d.in_final_backward) return;
    const std::vector<bool>& ready = programs_[d.stage].bucket_ready;
    for (int t = step.first_task; t < step.end_task; ++t) {
      if (static_cast<size_t>(t) >= ready.size() || !ready[static_cast<size_t>(t)]) continue;
      ++timers_;
      runner_.After(after + step.TaskDoneSeconds(tasks, t), [this, &d, t, pass = d.final_backwards] {
        if (d.final_backwards != pass || !d.in_final_backward) return;
        d.backward_task_done = std::max(d.backward_task_done, t);
        MaybeStartBucket(d);
      });
    }
  }

  // Tracks how far a final backward item has come, for the gradient buckets.
  void AfterStep(Device& d, const ScheduleItem& item, const PassStep& step) {
    if (item.forward || !d.in_final_backward) return;
    d.backward_task_done = std::max(d.backward_task_done, step.end_task - 1);
    MaybeStartBucket(d);
  }

  // The bytes a collective the engine times in closed form (inside a lane,
  // or an accumulation bucket) would put on each link of the unfolded
  // platform: the flows, as SimGrid would have run them, from the devices
  // this lane stands for (its own and, on a folded platform, their orbits),
  // each flow counted once, by the lane standing for its source, on its own
  // route. A fold is checked only against the collectives that run as flows:
  // the flows of one timed in closed form need not map onto one another (an
  // 8-device ring folded by rotations of blocks of 4 maps the hop 3->4 onto
  // 0->5). Expanded once per kind of collective.
  const ClosedFormTraffic& TaskTraffic(Device& d, const Task& task) {
    const auto key = std::make_tuple(task.group, static_cast<int>(task.collective), static_cast<int>(task.algorithm),
                                     task.comm_bytes, task.crossing_share);
    if (auto it = d.task_traffic.find(key); it != d.task_traffic.end()) return it->second;
    // Every device of the stage at once: each instance expanded, each flow routed once.
    std::vector<std::vector<std::pair<int32_t, double>>> by_device(devices_.size());
    std::vector<int32_t> route;
    for (const auto& members : shape_.groups[d.stage][task.group].members)
      for (const Phase& phase :
           ExpandCollective(task.collective, task.algorithm, task.comm_bytes, members, cluster_.devices_per_server,
                            fidelity_, task.library, task.crossing_share))
        for (const Flow& f : phase.flows) {
          if (f.src == f.dst) continue;
          auto& bytes = by_device[LaneStandingFor(f.src)];
          platform_.UnfoldedRoute(f.src, f.dst, &route);
          for (int32_t link : route) bytes.push_back({link, f.bytes});
        }
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].stage != d.stage) continue;
      // Each link once, its bytes summed.
      auto& bytes = by_device[i];
      std::sort(bytes.begin(), bytes.end());
      std::vector<std::pair<int32_t, double>> traffic;
      for (const auto& [link, b] : bytes) {
        if (traffic.empty() || traffic.back().first != link) traffic.push_back({link, 0.0});
        traffic.back().second += b;
      }
      devices_[i].task_traffic[key] = runner_.link_usage()->Prepare(std::move(traffic));
    }
    return d.task_traffic.at(key);
  }

  // Closed-form traffic of `task` over [Now(), Now() + seconds], when link usage is recorded.
  void RecordClosedFormTraffic(Device& d, const Task& task, double seconds) {
    if (LinkUsageRecorder* usage = runner_.link_usage())
      usage->AddClosedForm(TaskTraffic(d, task), Now(), Now() + seconds);
  }

  // A pass run in closed form (RunClosedSteps): its collectives' traffic over the pass.
  void RecordClosedPassTraffic(Device& d) {
    LinkUsageRecorder* usage = runner_.link_usage();
    if (!usage || !d.closed_passes) return;
    auto [it, is_new] = d.pass_traffic.try_emplace(d.steps);
    if (is_new) {
      std::map<int32_t, double> bytes;
      for (const PassStep& step : *d.steps)
        for (const std::vector<int>* list : {&step.collectives, &step.prefetches})
          for (int t : *list)
            for (const auto& [link, b] : TaskTraffic(d, (*d.tasks)[t]).link_bytes) bytes[link] += b;
      it->second = usage->Prepare({bytes.begin(), bytes.end()});
    }
    usage->AddClosedForm(it->second, d.pass_start, Now());
  }

  // The running unit has ended: its items on the timeline (a unit's split by
  // UnitSpans), the gradients it completed, and its outputs handed on.
  void EndUnit(Device& d) {
    RecordClosedPassTraffic(d);
    const StagePrograms& p = programs_[d.stage];
    const size_t first = d.item, count = d.unit_end - d.item;
    std::vector<double> spans{Now() - d.pass_start}, compute{d.pass_compute}, communication{d.pass_communication};
    if (d.unit) {
      // The measured collectives split as the closed form splits them.
      double closed = 0;
      for (double c : d.unit->communication) closed += c;
      compute = d.unit->compute;
      communication.clear();
      for (double c : d.unit->communication)
        communication.push_back(closed > 0 ? d.pass_communication * c / closed : 0);
      spans = UnitSpans(compute, communication, Now() - d.pass_start);
    }
    double at = d.pass_start;
    for (size_t k = 0; k < count; ++k) {
      const ScheduleItem& item = p.order[first + k];
      if (d.traced) {
        TraceEvent e = Event(d, Lane::kCompute, PassKind(item), PassName(item, V_, plan_.seq_chunks), at, spans[k]);
        e.micro_batch = plan_.MicroBatchOf(item);
        e.seq_chunk = plan_.SeqChunkOf(item);
        e.chunk = item.chunk;
        e.compute = compute[k];
        e.communication = communication[k];
        events_.push_back(std::move(e));
      }
      at += spans[k];
      // A unit completes a micro-batch's gradients only at its end.
      if (d.unit && plan_.training && p.finals.is_final[first + k]) {
        QueueBuckets(d, item, p.finals.is_chunk_last[first + k]);
        d.in_final_backward = false;
      }
    }
    if (d.in_final_backward || d.unit) {
      d.in_final_backward = false;  // its gradients are all complete
      MaybeStartBucket(d);
    }
    d.item = d.unit_end;
    // Held while the sends start, so that none ending at once runs the next pass early.
    ++d.sends_running;
    for (size_t k = 0; k < count; ++k) HandOn(d, p.order[first + k]);
    items_done_ += static_cast<double>(count);
    ReportProgress(items_done_, items_total_);
    if (--d.sends_running == 0) Next(d);  // else the last blocking send to end goes on
  }

  // Hands an item's activation (or its gradient) to the neighbouring virtual stage.
  void HandOn(Device& d, const ScheduleItem& item) {
    const int64_t vs = VirtualStage(plan_.schedule, item.chunk, d.stage, S_);
    const std::optional<int64_t> target = AdjacentVirtualStage(plan_.schedule, item.forward, vs, S_, V_);
    if (!item.Exchanges() || !(plan_.training || item.forward) || !target) return;
    const int64_t target_stage = StageOfVirtual(plan_.schedule, *target, S_);
    if (target_stage == d.stage) {
      // The V's turn: the next virtual stage runs on this device.
      arrived_[{d.rank, item.forward, *target, item.micro_batch}] += static_cast<int64_t>(d.ranks.size());
      return;
    }
    const double bytes = item.forward ? StageOf(d).send_forward_bytes : plan_.stages[target_stage].send_forward_bytes;
    for (int64_t rank : d.ranks) {
      const int64_t peer = plan_.Rank(target_stage, plan_.placement.LocalOf(rank));
      if (lane_of_rank_[peer] < 0) throw std::logic_error("a pipeline transfer reaches a device that is not simulated");
      const InputKey key{devices_[lane_of_rank_[peer]].rank, item.forward, *target, item.micro_batch};
      Phase phase;
      phase.flows.push_back({rank, peer, bytes});
      const bool traced = d.traced && rank == d.rank;
      const bool blocking = StageOf(d).blocking_sends;
      d.sends_running += blocking;
      const double begin = Now();
      runner_.Run({phase}, [this, key, traced, blocking, &d, item, begin] {
        if (traced) {
          TraceEvent e = Event(d, Lane::kPipeline, EventKind::kSend, "send " + PassName(item, 1, plan_.seq_chunks),
                               begin, Now() - begin);
          e.micro_batch = plan_.MicroBatchOf(item);
          e.seq_chunk = plan_.SeqChunkOf(item);
          e.chunk = item.chunk;
          events_.push_back(std::move(e));
        }
        Deliver(key);
        if (blocking && --d.sends_running == 0) Next(d);
      });
    }
  }

  void Deliver(const InputKey& key) {
    const int64_t count = ++arrived_[key];
    auto it = waiting_.find(key);
    if (it == waiting_.end() || count < static_cast<int64_t>(it->second->ranks.size())) return;
    Device& d = *it->second;
    waiting_.erase(it);
    Next(d);
  }

  // A collective inside a lane runs in closed form; otherwise each of the
  // lane's devices arrives at its group, and a group starts as flows once
  // all its (representative) members have arrived. The lane resumes when all
  // its groups are done.
  // `sequence` matches the members' calls; by default the group's next.
  void Collective(Device& d, const Task& task, std::function<void()> resume, std::optional<int64_t> sequence = {}) {
    const GroupInstances& groups = shape_.groups[d.stage][task.group];
    if (!sequence) sequence = d.counters[task.group]++;
    if (d.inside_lane[task.group]) {
      ++timers_;
      RecordClosedFormTraffic(d, task, task.seconds);
      runner_.After(task.seconds, std::move(resume));
      return;
    }
    auto pending = std::make_shared<int64_t>(static_cast<int64_t>(d.ranks.size()));
    auto shared_resume = std::make_shared<std::function<void()>>(std::move(resume));
    for (int64_t rank : d.ranks) {
      const int32_t instance = groups.of_local[plan_.placement.LocalOf(rank)];
      const auto key = std::make_tuple(d.stage, task.group, static_cast<int64_t>(instance), *sequence);
      Barrier& b = barriers_[key];
      b.resumes.push_back([pending, shared_resume] {
        if (--*pending == 0) (*shared_resume)();
      });
      if (++b.arrived < programs_[d.stage].arrivals[task.group][instance]) continue;
      auto resumes = std::move(b.resumes);
      barriers_.erase(key);
      ++collectives_;
      runner_.Run(ExpandCollective(task.collective, task.algorithm, task.comm_bytes, groups.members[instance],
                                   cluster_.devices_per_server, fidelity_, task.library, task.crossing_share),
                  [resumes = std::move(resumes)] {
                    for (const auto& r : resumes) r();
                  });
    }
  }

  // The next queued bucket run starts once its gradients exist on this
  // device (its backward item has produced them, or ended) and the previous
  // run is done.
  void MaybeStartBucket(Device& d) {
    const StageProgram& stage = StageOf(d);
    if (d.bucket_running || d.bucket_runs.empty() || !plan_.training) return;
    const Device::BucketRun run = d.bucket_runs.front();
    const GradientBucket& bucket = stage.buckets[run.bucket];
    const bool pass_over = run.pass + 1 < d.final_backwards || !d.in_final_backward;
    const bool ready = d.backward_task_done >= bucket.ready_after || bucket.ready_after >= d.final_tasks_end;
    if (!d.compute_done && !pass_over && !ready) return;
    d.bucket_runs.pop_front();
    d.bucket_running = true;
    Task task;
    task.kind = Task::Kind::kCollective;
    task.collective = bucket.collective;
    task.algorithm = bucket.algorithm;
    task.group = bucket.group;
    task.comm_bytes = bucket.bytes;
    task.seconds = bucket.seconds;
    task.library = bucket.library;
    const double begin = Now();
    auto done = [this, &d, begin, run, every = bucket.every_micro_batch] {
      if (d.traced) {
        TraceEvent e = Event(d, Lane::kCommunication, EventKind::kGradient, "gradients " + std::to_string(run.bucket),
                             begin, Now() - begin);
        if (every) e.micro_batch = run.micro_batch;
        events_.push_back(std::move(e));
      }
      d.bucket_running = false;
      MaybeStartBucket(d);
      MaybeFinish(d);
    };
    // Aggregated fidelity runs the accumulation ReduceScatters of the
    // micro-batches before the last in closed form on the device's stream:
    // every data-parallel group runs the same ones at once, and as flows they
    // cost five times the rest of a 4096-device step's simulation. The step's
    // final buckets, and every bucket at step fidelity, run as flows.
    if (!run.last && fidelity_ == Fidelity::kAggregated) {
      ++timers_;
      RecordClosedFormTraffic(d, task, bucket.seconds);
      runner_.After(bucket.seconds, std::move(done));
      return;
    }
    Collective(d, task, std::move(done));
  }

  void MaybeFinish(Device& d) {
    const StageProgram& stage = StageOf(d);
    if (!d.compute_done || d.bucket_running || d.finished) return;
    if (plan_.training && !d.bucket_runs.empty()) return;
    if (plan_.training && stage.mirror_gradient_bytes > 0) {
      if (!d.mirror_started) ExchangeWithMirror(d);
      if (d.mirror_sends_running > 0 || d.mirror_received < static_cast<int64_t>(d.ranks.size())) return;
      if (d.traced)
        events_.push_back(Event(d, Lane::kCommunication, EventKind::kGradient,
                                "gradients with stage " + std::to_string(MirrorStage(d.stage, S_)), d.mirror_begin,
                                Now() - d.mirror_begin));
    }
    double optimizer = 0;
    for (const Task& t : stage.optimizer) optimizer += t.seconds;
    d.finished = true;  // no more work will be scheduled
    if (d.traced && optimizer > 0)
      events_.push_back(Event(d, Lane::kCompute, EventKind::kOptimizer, "optimizer", Now(), optimizer));
    ++timers_;
    runner_.After(optimizer, [] {});
  }

  // dualpipe: each of the lane's devices sends its gradients to the device
  // in its place on the mirror stage, whose lane counts them in.
  void ExchangeWithMirror(Device& d) {
    d.mirror_started = true;
    d.mirror_begin = Now();
    const int64_t mirror_stage = MirrorStage(d.stage, S_);
    for (int64_t rank : d.ranks) {
      const int64_t peer = plan_.Rank(mirror_stage, plan_.placement.LocalOf(rank));
      if (lane_of_rank_[peer] < 0) throw std::logic_error("a gradient exchange reaches a device that is not simulated");
      Device& receiver = devices_[lane_of_rank_[peer]];
      Phase phase;
      phase.flows.push_back({rank, peer, StageOf(d).mirror_gradient_bytes});
      ++d.mirror_sends_running;
      runner_.Run({phase}, [this, &d, &receiver] {
        --d.mirror_sends_running;
        ++receiver.mirror_received;
        MaybeFinish(d);
        if (&receiver != &d) MaybeFinish(receiver);
      });
    }
  }

  const Plan& plan_;
  const ClusterSpec& cluster_;
  Fidelity fidelity_;
  ClusterPlatform platform_;
  FlowRunner runner_;
  const bool record_link_usage_;
  int64_t S_ = 1, M_ = 1, V_ = 1;
  StepShape shape_;
  StepSymmetry symmetry_;
  std::vector<StagePrograms> programs_;
  std::vector<Device> devices_;
  double items_total_ = 0, items_done_ = 0;  // schedule items of every simulated device, for progress
  std::map<std::tuple<int64_t, int, int64_t, int64_t>, Barrier> barriers_;
  std::map<InputKey, int64_t> arrived_;  // transfers received per pass input
  std::vector<int64_t> lane_of_rank_;
  std::map<InputKey, Device*> waiting_;
  std::vector<TraceEvent> events_;
  int64_t collectives_ = 0, timers_ = 0;
};

}  // namespace

double EstimateSimGridSeconds(int64_t transfers, int64_t alltoall_flows, int64_t steps, int64_t devices) {
  // Measured on a 2-core VM (RelWithDebInfo): a transfer's flow costs 18 us
  // plus SimGrid 3.32's O(flows in flight) completion, which grows with the
  // devices sending at once (21 us each at 1,024 simulated devices, 46 us at
  // 8,192); an AlltoAll's flows, started together in one phase, 3.5 us each
  // (DeepSeek-V3 on 2048 H800: 3.1 M of them in 11 s); a pass step about
  // 1.2 us with its timers and in-pass flows (PanGu 13B, 1024 micro-batches:
  // 8.1 M steps in 9 s).
  const double in_flight = 3.4e-9 * static_cast<double>(devices);
  return static_cast<double>(transfers) * (18e-6 + in_flight) +
         static_cast<double>(alltoall_flows) * (3.5e-6 + in_flight) + static_cast<double>(steps) * 1.2e-6;
}

Trace RunSimGrid(const Plan& plan, const ClusterSpec& cluster, Fidelity fidelity, Symmetry symmetry,
                 const TraceRequest& trace, SimGridStats* stats) {
  CheckTaskRuns(plan, kMaxSimGridTaskRuns, "SimGrid",
                fmt::format("about a minute; the analytical engine takes up to {}", kMaxAnalyticalTaskRuns));
  const auto wall_start = std::chrono::steady_clock::now();
  Engine engine(plan, cluster, fidelity, symmetry, trace);
  Trace result = engine.Run(stats);
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace shardlab::sim
