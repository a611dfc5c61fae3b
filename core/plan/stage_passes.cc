#include "core/plan/stage_passes.h"

#include <algorithm>
#include <utility>

namespace shardlab {
namespace {

// Each chunk's steps, each sequence chunk's in turn.
std::vector<std::vector<PassStep>> PerChunk(const std::vector<Task>& tasks, int64_t chunks, int64_t seq_chunks,
                                            bool reversed) {
  std::vector<std::vector<Task>> per_seq_chunk;  // empty without sequence chunks: `tasks` themselves
  for (int64_t j = 0; seq_chunks > 1 && j < seq_chunks; ++j) per_seq_chunk.push_back(SequenceChunkTasks(tasks, j));
  std::vector<std::vector<PassStep>> out;
  for (int64_t c = 0; c < chunks; ++c)
    for (int64_t j = 0; j < seq_chunks; ++j)
      out.push_back(ChunkSteps(seq_chunks > 1 ? per_seq_chunk[static_cast<size_t>(j)] : tasks, chunks, c, reversed));
  return out;
}

}  // namespace

std::vector<Task> SequenceChunkTasks(const std::vector<Task>& tasks, int64_t j) {
  std::vector<Task> out = tasks;
  for (Task& t : out)
    if (!t.seq_chunk_seconds.empty()) t.seconds = t.seq_chunk_seconds[static_cast<size_t>(j)];
  return out;
}

StagePasses::StagePasses(const StageProgram& stage, int64_t chunks, int64_t seq_chunks, PassOverlap overlapped)
    : stage_(&stage),
      chunks_(chunks),
      seq_chunks_(seq_chunks),
      overlapped_(std::move(overlapped)),
      forward_(PerChunk(stage.forward, chunks, seq_chunks, false)),
      backward_(PerChunk(stage.backward, chunks, seq_chunks, true)),
      weight_gradient_(PerChunk(stage.weight_gradient, chunks, seq_chunks, true)) {
  if (!overlapped_.empty()) unit_tasks_ = shardlab::UnitTasks(stage);
}

const std::vector<PassStep>& StagePasses::Steps(const ScheduleItem& item) const {
  const auto& per_chunk = item.forward ? forward_ : item.weight_gradient ? weight_gradient_ : backward_;
  return per_chunk[static_cast<size_t>(item.chunk * seq_chunks_ + item.micro_batch % seq_chunks_)];
}

const UnitPass& StagePasses::Unit(const std::vector<ScheduleItem>& items) {
  UnitKind kind;
  for (const ScheduleItem& i : items) kind.emplace_back(i.forward, i.weight_gradient, i.chunk);
  auto it = units_.find(kind);
  if (it == units_.end()) it = units_.emplace(std::move(kind), OverlapUnit(*stage_, items, chunks_, overlapped_)).first;
  return it->second;
}

namespace {

// Under sequence pipelining a micro-batch's last gradient pass is its sequence's first chunk.
std::vector<Task> FinalGradientTasks(const StageProgram& stage) { return SequenceChunkTasks(stage.GradientTasks(), 0); }

}  // namespace

std::vector<double> BucketLeadSeconds(const StageProgram& stage, int64_t chunks, double* pass_seconds,
                                      int64_t final_chunk) {
  const std::vector<Task> tasks = FinalGradientTasks(stage);
  std::vector<double> ends(tasks.size(), 0);
  const double duration = ClosedFormPass(ChunkSteps(tasks, chunks, final_chunk, true), tasks,
                                         [&](const PassStep& step, double end, double) {
                                           const double start = end - step.ClosedFormSeconds(tasks);
                                           for (int i = step.first_task; i < step.end_task; ++i)
                                             ends[i] = start + step.TaskDoneSeconds(tasks, i);
                                         });
  // Tasks of other chunks keep end 0: their gradients existed when this pass began.
  std::vector<double> lead;
  for (const GradientBucket& bucket : stage.buckets)
    lead.push_back(duration - (bucket.ready_after >= 0 ? ends[static_cast<size_t>(bucket.ready_after)] : 0.0));
  if (pass_seconds) *pass_seconds = duration;
  return lead;
}

double FinalGradientComputeSeconds(const StageProgram& stage, int64_t chunks, int64_t final_chunk) {
  const std::vector<Task> tasks = FinalGradientTasks(stage);
  double compute = 0;
  for (const PassStep& step : ChunkSteps(tasks, chunks, final_chunk, true)) compute += step.ComputeEndSeconds(tasks);
  return compute;
}

double ContentionOfBuckets(double duration, double compute, const std::vector<BucketBesidePass>& buckets) {
  if (duration <= 0) return 0;
  // From the pass's start, the stream free.
  double stream_free = 0, held = 0;
  for (const BucketBesidePass& b : buckets) {
    const double begin = std::max(duration - b.lead, stream_free);
    stream_free = begin + b.seconds;
    held += b.compute_share * std::clamp(duration - begin, 0.0, b.seconds);
  }
  return held * std::min(1.0, compute / duration);
}

std::vector<int64_t> BucketChunks(const StageProgram& stage, int64_t chunks) {
  const std::vector<int64_t> chunk_of_task = ChunkOfEachTask(stage.GradientTasks(), chunks, true);
  std::vector<int64_t> out(stage.buckets.size(), 0);
  for (size_t b = 0; b < stage.buckets.size(); ++b) {
    // A split backward's bucket whose gradients all came with the
    // input-gradient pass (ready_after -1) holds the gradients that list
    // reaches first: the chunk whose share starts it.
    const int ready_after = stage.buckets[b].ready_after;
    if (!chunk_of_task.empty()) out[b] = chunk_of_task[ready_after < 0 ? 0 : static_cast<size_t>(ready_after)];
  }
  return out;
}

double BucketContentionSeconds(const StageProgram& stage, int64_t chunks, bool last, int64_t final_chunk) {
  double duration = 0;
  const std::vector<double> lead = BucketLeadSeconds(stage, chunks, &duration, final_chunk);
  const std::vector<int64_t> chunk_of = BucketChunks(stage, chunks);
  std::vector<BucketBesidePass> buckets;
  for (size_t b = 0; b < stage.buckets.size(); ++b)
    if ((last || stage.buckets[b].every_micro_batch) && chunk_of[b] == final_chunk)
      buckets.push_back({lead[b], stage.buckets[b].seconds, stage.buckets[b].compute_share});
  return ContentionOfBuckets(duration, FinalGradientComputeSeconds(stage, chunks, final_chunk), buckets);
}

FinalGradientPasses FindFinalGradientPasses(const Plan& plan, const StageProgram& stage,
                                            const std::vector<ScheduleItem>& order) {
  FinalGradientPasses out;
  out.is_final.assign(order.size(), false);
  out.is_chunk_last.assign(order.size(), false);
  std::map<std::pair<int64_t, int64_t>, size_t> last_of;  // (micro-batch, chunk) -> item
  for (size_t i = 0; i < order.size(); ++i)
    if (stage.CompletesGradients(order[i])) last_of[{plan.MicroBatchOf(order[i]), order[i].chunk}] = i;
  std::map<int64_t, size_t> chunk_last;
  for (const auto& [key, i] : last_of) {
    out.is_final[i] = true;
    out.last = std::max(out.last, i);
    size_t& last = chunk_last[key.second];
    last = std::max(last, i);
  }
  for (const auto& [chunk, i] : chunk_last) out.is_chunk_last[i] = true;
  if (!last_of.empty()) out.last_chunk = order[out.last].chunk;
  return out;
}

}  // namespace shardlab
