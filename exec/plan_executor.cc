#include "exec/plan_executor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/layout/device_matrix.h"
#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"
#include "core/util/progress_report.h"
#include "core/util/statistics.h"

namespace shardlab::exec {

namespace {

TraceEvent Event(int64_t stage, Lane lane, EventKind kind, std::string name, int64_t micro_batch = -1) {
  TraceEvent e = MakeEvent(stage, lane, kind, std::move(name));
  e.micro_batch = micro_batch;
  return e;
}

constexpr Stream kCompute = Stream::kCompute;
constexpr Stream kComm = Stream::kCommunication;
constexpr Stream kSend = Stream::kSend;

// A timed piece of work and, for the timeline, how it shows there.
struct Timing {
  std::string type;
  double predicted = 0;
  Runtime::Event begin = 0, end = 0;
  bool timeline = false;
  TraceEvent event;
  bool compute = false;  // counts as compute time
};

}  // namespace

void CheckExecutable(const Plan& plan) {
  CheckPlacement(plan);
  if (RunsChunks(plan.schedule) && plan.chunks > 1)
    throw std::runtime_error(
        "the executor runs one chunk per stage (1f1b, gpipe, zero_bubble_h1), not virtual pipeline chunks "
        "(interleaved, zero_bubble_v, dualpipe, seqvpp, seqsmartvpp)");
  if (plan.seq_chunks > 1)
    throw std::runtime_error(
        "the executor runs each micro-batch as one pass: seq_split_num's sequence chunks (seqpipe, seqvpp, "
        "seqsmartvpp) are simulated only");
  if (!plan.overlap_forward_backward.empty())
    throw std::runtime_error(
        "the executor runs one pass at a time: overlap_forward_backward (a forward beside a backward) is simulated "
        "only");
}

namespace {

class RankProgram {
 public:
  RankProgram(const Plan& plan, int64_t rank, Communicator& world, Runtime& runtime)
      : plan_(plan), rank_(rank), world_(world), runtime_(runtime) {
    CheckExecutable(plan);
    if (world.size() != plan.devices)
      throw std::runtime_error(
          fmt::format("the plan has {} devices but the world {} ranks", plan.devices, world.size()));
    S_ = static_cast<int64_t>(plan.stages.size());
    stage_ = plan.placement.StageOf(rank);
    local_ = plan.placement.LocalOf(rank);
    ConnectGroups();
    ConnectPipeline();
    ReserveBuffers();
  }

  int64_t stage() const { return stage_; }

  // One step; returns this rank's step time and fills the timings.
  double RunStep() {
    timings_.clear();
    runtime_.ResetEvents();
    world_.Barrier();
    origin_ = runtime_.Record(kCompute);
    const StageProgram& stage = Stage();
    for (const Task& t : stage.step_start) {
      TraceEvent e = Event(stage_, Lane::kCommunication, EventKind::kWeightGather, t.name);
      Collective(kCompute, t, t.seconds, "weight_gather", &e);
    }
    const std::vector<ScheduleItem> order = StageOrder(plan_, stage_);
    // The step's last pass that completes gradients (a backward, or a weight-gradient pass when split).
    size_t last_gradients = order.size();
    for (size_t i = 0; i < order.size(); ++i)
      if (stage.CompletesGradients(order[i])) last_gradients = i;
    for (size_t i = 0; i < order.size(); ++i) {
      const ScheduleItem& item = order[i];
      if (item.forward)
        Forward(item.micro_batch);
      else if (item.weight_gradient)
        WeightGradient(item.micro_batch, i == last_gradients);
      else
        Backward(item.micro_batch, i == last_gradients);
    }
    StartBuckets(static_cast<int>(stage.GradientTasks().size()));  // any not yet started
    runtime_.Wait(kCompute, runtime_.Record(kComm));
    runtime_.Wait(kCompute, runtime_.Record(kSend));
    for (const Task& t : stage.optimizer) {
      TraceEvent e = Event(stage_, Lane::kCompute, EventKind::kOptimizer, "optimizer");
      Timed(kCompute, "optimizer", t.seconds, true, &e, [&] { runtime_.MemoryPass(kCompute, t.bytes); });
    }
    end_ = runtime_.Record(kCompute);
    runtime_.Synchronize();
    return Seconds(end_);
  }

  // The last step's timeline and task types; a pass's event carries the
  // compute and the collectives that ran inside it.
  void Collect(RankExecution* out) {
    out->events.clear();
    std::map<std::string, TaskTypeTime> types;
    double compute = 0, communication = 0;  // inside the pass being timed
    for (const Timing& t : timings_) {
      const double begin = Seconds(t.begin), duration = Seconds(t.end) - begin;
      if (!t.type.empty()) {
        TaskTypeTime& tt = types[t.type];
        tt.type = t.type;
        ++tt.count;
        tt.measured += duration;
        tt.predicted += t.predicted;
      }
      if (!t.timeline) {  // a task inside a pass: timed before the pass around it
        (t.compute ? compute : communication) += duration;
        continue;
      }
      TraceEvent e = t.event;
      e.start = begin;
      e.duration = duration;
      e.ranks = {rank_};
      if (e.IsPass()) {
        e.compute = compute;
        e.communication = communication;
        compute = communication = 0;
      }
      out->events.push_back(std::move(e));
    }
    out->task_types.clear();
    for (auto& [name, tt] : types) out->task_types.push_back(tt);
  }

 private:
  const StageProgram& Stage() const { return plan_.stages[stage_]; }
  double Seconds(Runtime::Event e) { return runtime_.Elapsed(origin_, e); }

  // Every group spec of every stage, split twice (compute and communication
  // streams); all ranks take part in every split, with no color where their
  // stage has fewer specs.
  void ConnectGroups() {
    size_t specs = 0;
    for (const StageProgram& s : plan_.stages) specs = std::max(specs, s.groups.size());
    const StageProgram& stage = Stage();
    const std::vector<int64_t> ranks = plan_.StageRanks(stage_);
    for (Stream s : {kCompute, kComm}) groups_[static_cast<int>(s)].resize(specs);
    for (size_t g = 0; g < specs; ++g) {
      int color = -1, key = 0;
      if (g < stage.groups.size()) {
        const CommGroupSpec& spec = stage.groups[g];
        const auto members = DeviceMatrix(spec.device_matrix, ranks).GroupAlongDims(rank_, spec.dims);
        color = static_cast<int>(*std::min_element(members.begin(), members.end()));
        key = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
      }
      for (Stream s : {kCompute, kComm}) {
        auto comm = world_.Split(color, key);
        if (comm) comm->BindStream(runtime_.NativeStream(s));
        groups_[static_cast<int>(s)][g] = std::move(comm);
      }
    }
  }

  // One two-rank communicator per neighbouring pair and direction, each used
  // on one stream by each of its ranks: the sender's send stream, the
  // receiver's compute stream (so that NCCL never sees one communicator on two streams).
  void ConnectPipeline() {
    for (int parity = 0; parity < 2; ++parity) {
      for (bool activations : {true, false}) {
        int color = -1, key = 0;
        const bool lower = stage_ % 2 == parity && stage_ + 1 < S_;
        const bool upper = stage_ >= 1 && (stage_ - 1) % 2 == parity;
        if (lower) color = static_cast<int>(plan_.Rank(stage_, local_)), key = 0;
        if (upper) color = static_cast<int>(plan_.Rank(stage_ - 1, local_)), key = 1;
        auto comm = world_.Split(color, key);
        if (!comm) continue;
        const bool sends = activations == lower;  // activations go up, gradients down
        comm->BindStream(runtime_.NativeStream(sends ? kSend : kCompute));
        if (activations)
          (lower ? to_next_ : from_prev_) = std::move(comm);
        else
          (lower ? grad_from_next_ : grad_to_prev_) = std::move(comm);
      }
    }
  }

  static size_t BufferElements(const Task& t, const std::vector<std::unique_ptr<Communicator>>& groups) {
    if (t.kind != Task::Kind::kCollective || t.group < 0) return 0;
    const size_t n = groups[t.group] ? static_cast<size_t>(groups[t.group]->size()) : 1;
    const size_t e = ElementsFor(t.comm_bytes);
    return t.collective == shardlab::Collective::kAllGather ? e * n : e + n;
  }

  void ReserveBuffers() {
    const StageProgram& stage = Stage();
    size_t compute = 1, comm = 1, send = 1;
    for (const auto* tasks : {&stage.forward, &stage.backward, &stage.step_start})
      for (const Task& t : *tasks) {
        const bool beside = t.overlapped || t.prefetch;  // on the communication stream
        const size_t e = BufferElements(t, groups_[static_cast<int>(beside ? kComm : kCompute)]);
        (beside ? comm : compute) = std::max(beside ? comm : compute, e);
      }
    for (const GradientBucket& b : stage.buckets) {
      const size_t n = groups_[1][b.group] ? static_cast<size_t>(groups_[1][b.group]->size()) : 1;
      comm = std::max(comm, ElementsFor(b.bytes) * (b.collective == shardlab::Collective::kAllGather ? n : 1) + n);
    }
    // Sent: activations to the next stage, gradients to the previous one; received: the reverse.
    const bool has_prev = stage_ > 0, has_next = stage_ + 1 < S_;
    const double transfer =
        std::max(has_next ? stage.send_forward_bytes : 0.0, has_prev ? stage.send_backward_bytes : 0.0);
    const double received = std::max(has_prev ? plan_.stages[stage_ - 1].send_forward_bytes : 0.0,
                                     has_next ? plan_.stages[stage_ + 1].send_backward_bytes : 0.0);
    send = std::max(send, ElementsFor(transfer));
    compute = std::max(compute, ElementsFor(received));
    runtime_.Reserve(kCompute, compute);
    runtime_.Reserve(kComm, comm);
    runtime_.Reserve(kSend, send);
  }

  template <typename Work>
  void Timed(Stream s, const std::string& type, double predicted, bool compute, TraceEvent* event, Work work) {
    Timing t;
    t.type = type;
    t.predicted = predicted;
    t.compute = compute;
    t.begin = runtime_.Record(s);
    work();
    t.end = runtime_.Record(s);
    if (event) {
      t.timeline = true;
      t.event = *event;
    }
    timings_.push_back(std::move(t));
  }

  void Kernel(Stream s, const Task& t) {
    std::string type = "memory";
    if (!t.kernel.gemm.empty()) {
      type = "gemm";
    } else if (t.flops > 8 * t.bytes) {
      type = "gemm";  // a compute-bound operator that is not a MatMul (convolutions): a cube of equal FLOPs
    } else if (t.on_host || t.pcie_copy) {
      type = "host";
    }
    Timed(s, type, t.seconds, true, nullptr, [&] {
      if (!t.kernel.gemm.empty()) {
        const double one = 2.0 * static_cast<double>(t.kernel.gemm.m) * static_cast<double>(t.kernel.gemm.n) *
                           static_cast<double>(t.kernel.gemm.k);
        // The products of a batched kernel, twice over in the backward (dA and dB).
        const int batch = std::max(1, static_cast<int>(std::lround(t.flops / one)));
        runtime_.Gemm(s, t.kernel.gemm.m, t.kernel.gemm.n, t.kernel.gemm.k, batch);
      } else if (type == "gemm") {
        const int64_t side = std::max<int64_t>(1, std::llround(std::cbrt(t.flops / 2)));
        runtime_.Gemm(s, side, side, side);
      } else {
        runtime_.MemoryPass(s, t.bytes);
      }
    });
  }

  // A collective of the plan on stream `s`, with the group's communicator for that stream.
  void Collective(Stream s, const Task& t, double predicted, const std::string& type, TraceEvent* event) {
    Communicator* comm = t.group >= 0 ? groups_[static_cast<int>(s)][t.group].get() : nullptr;
    Timed(s, type, predicted, false, event, [&] {
      if (!comm || comm->size() == 1) return;
      const size_t n = static_cast<size_t>(comm->size());
      const size_t elements = ElementsFor(t.comm_bytes);
      float* in = runtime_.Input(s);
      float* out = runtime_.Output(s);
      const shardlab::Collective c = t.collective;
      runtime_.Submit(s, [comm, c, in, out, n, elements] {
        switch (c) {
          case shardlab::Collective::kAllReduce:
            comm->AllReduce(in, elements);
            break;
          case shardlab::Collective::kAllGather:
            comm->AllGather(in, out, elements);
            break;
          case shardlab::Collective::kReduceScatter:
            comm->ReduceScatter(in, out, std::max<size_t>(1, elements / n));
            break;
          case shardlab::Collective::kBroadcast:
            comm->Broadcast(in, elements, 0);
            break;
          case shardlab::Collective::kAllToAll:
          case shardlab::Collective::kSendRecv:
            comm->AllToAll(in, out, std::max<size_t>(1, elements / n));
            break;
        }
      });
    });
  }

  // Prefetched weight gathers run on the communication stream as their step
  // starts; a step that needs them makes the compute stream wait for the
  // event recorded after the last one it needs.
  void Pass(const std::vector<Task>& tasks, bool completes_gradients) {
    std::vector<Runtime::Event> prefetched;
    for (const PassStep& step : PassSteps(tasks, 0, tasks.size())) {
      for (int p : step.prefetches) {
        Collective(kComm, tasks[p], tasks[p].seconds, "prefetch " + std::string(ToString(tasks[p].collective)),
                   nullptr);
        prefetched.push_back(runtime_.Record(kComm));
      }
      if (step.prefetches_needed > 0)
        runtime_.Wait(kCompute, prefetched.at(static_cast<size_t>(step.prefetches_needed) - 1));
      const bool overlapped = !step.collectives.empty() && tasks[step.collectives.front()].overlapped;
      if (overlapped) runtime_.Wait(kComm, runtime_.Record(kCompute));
      for (int c : step.collectives) {
        const Task& t = tasks[c];
        Collective(overlapped ? kComm : kCompute, t, t.seconds, ToString(t.collective), nullptr);
      }
      for (int i = step.first_task; i < step.end_task; ++i) {
        if (tasks[i].kind != Task::Kind::kCompute) continue;
        Kernel(kCompute, tasks[i]);
        if (completes_gradients) StartBuckets(i);
      }
      if (overlapped) runtime_.Wait(kCompute, runtime_.Record(kComm));
    }
  }

  // Starts, on the communication stream, the running backward pass's buckets
  // whose last gradient is produced by backward task `done` or earlier: every
  // bucket in the step's last backward pass, the every-micro-batch ones
  // (gradient_accumulation_shard) in the others.
  void StartBuckets(int done) {
    const StageProgram& stage = Stage();
    if (!plan_.training) return;
    for (; buckets_started_ < stage.buckets.size() && stage.buckets[buckets_started_].ready_after <= done;
         ++buckets_started_) {
      const GradientBucket& b = stage.buckets[buckets_started_];
      if (!last_backward_ && !b.every_micro_batch) continue;
      runtime_.Wait(kComm, runtime_.Record(kCompute));
      Task t;
      t.kind = Task::Kind::kCollective;
      t.collective = b.collective;
      t.group = b.group;
      t.comm_bytes = b.bytes;
      TraceEvent e =
          Event(stage_, Lane::kCommunication, EventKind::kGradient, "gradients " + std::to_string(buckets_started_),
                b.every_micro_batch ? backward_micro_batch_ : -1);
      Collective(kComm, t, b.seconds, std::string("gradient ") + ToString(b.collective), &e);
    }
  }

  void Receive(Communicator* comm, double bytes, int64_t micro_batch, const char* what) {
    TraceEvent e =
        Event(stage_, Lane::kPipeline, EventKind::kReceive, fmt::format("recv {} {}", what, micro_batch), micro_batch);
    float* out = runtime_.Output(kCompute);
    const size_t elements = ElementsFor(bytes);
    Timed(kCompute, "", 0, false, &e, [&] {
      runtime_.Submit(kCompute, [comm, out, elements, micro_batch] {
        comm->Recv(out, elements, 1 - comm->rank(), static_cast<int>(micro_batch));
      });
    });
  }

  // The pipeline communicators hold two ranks: the peer is the other one.
  void SendTo(Communicator* comm, double bytes, int64_t micro_batch, const char* what) {
    const int peer = 1 - comm->rank();
    runtime_.Wait(kSend, runtime_.Record(kCompute));
    TraceEvent e =
        Event(stage_, Lane::kPipeline, EventKind::kSend, fmt::format("send {} {}", what, micro_batch), micro_batch);
    float* in = runtime_.Input(kSend);
    const size_t elements = ElementsFor(bytes);
    // Timeline only: a send's time includes waiting for the receiver to be ready.
    Timed(kSend, "", 0, false, &e, [&] {
      runtime_.Submit(kSend, [comm, in, elements, peer, micro_batch] {
        comm->Send(in, elements, peer, static_cast<int>(micro_batch));
      });
    });
  }

  void Forward(int64_t micro_batch) {
    const StageProgram& stage = Stage();
    if (stage_ > 0) Receive(from_prev_.get(), plan_.stages[stage_ - 1].send_forward_bytes, micro_batch, "F");
    TraceEvent e = Event(stage_, Lane::kCompute, EventKind::kForward, "F" + std::to_string(micro_batch), micro_batch);
    Timed(kCompute, "", 0, false, &e, [&] { Pass(stage.forward, false); });
    if (stage_ + 1 < S_) SendTo(to_next_.get(), stage.send_forward_bytes, micro_batch, "F");
  }

  // `last`: the step's last pass that completes gradients.
  void Backward(int64_t micro_batch, bool last) {
    const StageProgram& stage = Stage();
    if (stage_ + 1 < S_) Receive(grad_from_next_.get(), plan_.stages[stage_ + 1].send_backward_bytes, micro_batch, "B");
    TraceEvent e = Event(stage_, Lane::kCompute, EventKind::kBackward, "B" + std::to_string(micro_batch), micro_batch);
    if (stage.splits_backward)
      Timed(kCompute, "", 0, false, &e, [&] { Pass(stage.backward, false); });
    else
      GradientPass(stage.backward, micro_batch, last, &e);
    if (stage_ > 0) SendTo(grad_to_prev_.get(), stage.send_backward_bytes, micro_batch, "B");
  }

  void WeightGradient(int64_t micro_batch, bool last) {
    TraceEvent e =
        Event(stage_, Lane::kCompute, EventKind::kWeightGradient, "W" + std::to_string(micro_batch), micro_batch);
    GradientPass(Stage().weight_gradient, micro_batch, last, &e);
  }

  // The pass that completes a micro-batch's gradients, starting its buckets as they become ready.
  void GradientPass(const std::vector<Task>& tasks, int64_t micro_batch, bool last, TraceEvent* e) {
    buckets_started_ = 0;
    last_backward_ = last;
    backward_micro_batch_ = micro_batch;
    StartBuckets(-1);
    Timed(kCompute, "", 0, false, e, [&] { Pass(tasks, true); });
    if (!last) StartBuckets(static_cast<int>(tasks.size()));
  }

  const Plan& plan_;
  int64_t rank_;
  Communicator& world_;
  Runtime& runtime_;
  int64_t S_ = 1, stage_ = 0, local_ = 0;
  std::vector<std::unique_ptr<Communicator>> groups_[2];  // [compute, communication][group spec]
  std::unique_ptr<Communicator> to_next_, from_prev_, grad_to_prev_, grad_from_next_;
  std::vector<Timing> timings_;
  Runtime::Event origin_ = 0, end_ = 0;
  // The running backward pass's gradient buckets.
  size_t buckets_started_ = 0;
  bool last_backward_ = false;
  int64_t backward_micro_batch_ = -1;
};

}  // namespace

RankExecution ExecutePlan(const Plan& plan, int64_t rank, Communicator& world, Runtime& runtime,
                          const ExecutionOptions& options) {
  RankProgram program(plan, rank, world, runtime);
  RankExecution out;
  out.rank = rank;
  out.stage = program.stage();
  const int measured = std::max(options.steps, 1), total = options.warmup_steps + measured;
  for (int i = 0; i < options.warmup_steps; ++i) {
    program.RunStep();
    ReportProgress(i + 1, total);
  }
  // Every measured step's details; the median step's are kept.
  std::vector<RankExecution> steps;
  std::vector<double> times;
  for (int i = 0; i < measured; ++i) {
    times.push_back(program.RunStep());
    steps.push_back(out);
    program.Collect(&steps.back());
    ReportProgress(options.warmup_steps + i + 1, total);
  }
  const size_t median = MedianSampleIndex(times);
  out = std::move(steps[median]);
  out.step_seconds = times;
  out.median_step_seconds = times[median];
  return out;
}

StepResult MeasuredStep(const Plan& plan, const std::vector<RankExecution>& ranks) {
  Trace trace;
  trace.engine = "measured";
  for (const RankExecution& r : ranks)
    if (r.rank == plan.RepresentativeRank(r.stage))
      trace.events.insert(trace.events.end(), r.events.begin(), r.events.end());
  return Summarize(plan, std::move(trace));
}

nlohmann::json ToJson(const RankExecution& r) {
  nlohmann::json types = nlohmann::json::array();
  for (const TaskTypeTime& t : r.task_types)
    types.push_back({{"type", t.type}, {"count", t.count}, {"measured", t.measured}, {"predicted", t.predicted}});
  nlohmann::json events = nlohmann::json::array();
  for (const TraceEvent& e : r.events) events.push_back(shardlab::ToJson(e));
  return {{"rank", r.rank},
          {"stage", r.stage},
          {"step_seconds", r.step_seconds},
          {"median_step_seconds", r.median_step_seconds},
          {"events", events},
          {"task_types", types}};
}

RankExecution RankExecutionFromJson(const nlohmann::json& j) {
  RankExecution r;
  r.rank = j.at("rank");
  r.stage = j.at("stage");
  r.step_seconds = j.at("step_seconds").get<std::vector<double>>();
  r.median_step_seconds = j.at("median_step_seconds");
  for (const auto& e : j.at("events")) r.events.push_back(TraceEventFromJson(e));
  for (const auto& t : j.at("task_types"))
    r.task_types.push_back({t.at("type"), t.at("count"), t.at("measured"), t.at("predicted")});
  return r;
}

}  // namespace shardlab::exec
