#include "core/search/fusion_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

#include "core/analytical/analytical_engine.h"
#include "core/plan/lowering.h"
#include "core/plan/pass_steps.h"
#include "core/plan/stage_passes.h"
#include "core/report/step_result.h"

namespace shardlab {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs buckets on one communication stream in order of readiness, from time 0.
double RunStream(std::vector<FusionBucket>& buckets, const std::vector<const FusionList*>& lists) {
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const FusionBucket& a, const FusionBucket& b) { return a.ready < b.ready; });
  double free = 0;
  for (FusionBucket& b : buckets) {
    b.start = std::max(b.ready, free);
    b.finish = b.start + lists[b.list]->seconds(b.bytes);
    free = b.finish;
  }
  return free;
}

FusionBucket MakeBucket(const FusionList& list, int index, size_t begin, size_t end) {
  FusionBucket b;
  b.list = index;
  b.begin = begin;
  b.end = end;
  for (size_t i = begin; i < end; ++i) {
    const FusionGradient& g = list.gradients[i];
    b.bytes += g.bytes;
    if (i == begin || g.ready > b.ready) {
      b.ready = g.ready;
      b.pass = g.pass;
    }
  }
  return b;
}

std::vector<double> BytesOf(const FusionList& list) {
  std::vector<double> bytes;
  for (const FusionGradient& g : list.gradients) bytes.push_back(g.bytes);
  return bytes;
}

// Each gradient's chunk: its pass's.
std::vector<int64_t> ChunksOf(const FusionList& list, const FusionStage& stage) {
  std::vector<int64_t> chunks;
  for (const FusionGradient& g : list.gradients) chunks.push_back(stage.passes[g.pass].chunk);
  return chunks;
}

std::vector<double> ElementsOf(const FusionList& list) {
  std::vector<double> elements;
  for (const FusionGradient& g : list.gradients) elements.push_back(g.elements);
  return elements;
}

}  // namespace

double FusionList::Bytes() const {
  double total = 0;
  for (const FusionGradient& g : gradients) total += g.bytes;
  return total;
}

FusionProblem BuildFusionProblem(const RunSpec& run, const ShardedGraph& sharded) {
  const Graph& graph = sharded.graph;
  // One bucket per gradient (a 0 MB threshold) gives each gradient's ready
  // time; the weight AllGathers keep the run's setting.
  RunSpec unfused = run;
  for (FusionSetting* f : {&unfused.parallel.comm_fusion.allreduce, &unfused.parallel.comm_fusion.reducescatter}) {
    f->mode = FusionSetting::Mode::kSize;
    f->size_mb = 0;
  }
  const Plan plan = LowerToPlan(unfused, sharded);
  const StepResult timeline = Summarize(plan, RunAnalytical(plan));
  FusionProblem problem;
  problem.data_parallel = run.parallel.parallel_mode == ParallelMode::kDataParallel;
  problem.parallel_optimizer = run.parallel.enable_parallel_optimizer;
  problem.openstate = run.parallel.comm_fusion.openstate;
  problem.megatron_ddp = run.stack.overlap_grad_reduce;
  problem.allreduce = run.parallel.comm_fusion.allreduce;
  problem.reducescatter = run.parallel.comm_fusion.reducescatter;
  const int64_t chunks = RunsChunks(plan.schedule) ? plan.chunks : 1;
  auto cluster = std::make_shared<const ClusterSpec>(run.cluster);
  auto overrides = std::make_shared<const std::map<Collective, CollectiveAlgorithm>>(run.simulation.collective_algorithms);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StageProgram& stage = plan.stages[s];
    FusionStage fs;
    fs.stage = stage.stage;
    for (const Task& t : stage.optimizer) fs.optimizer += t.seconds;
    // Each chunk's gradient passes as the timeline ran them, per micro-batch.
    const EventKind gradient_pass = stage.splits_backward ? EventKind::kWeightGradient : EventKind::kBackward;
    std::map<int64_t, std::map<int64_t, double>> pass_end;  // per chunk, per micro-batch
    for (const TraceEvent& e : timeline.events)
      if (e.stage == stage.stage && e.kind == gradient_pass) {
        double& end = pass_end[e.chunk][e.micro_batch];
        end = std::max(end, e.end());
      }
    // Each chunk's last pass, in the order they end. The engines lengthen
    // each by what its buckets hold back (BucketContentionSeconds); the
    // buckets were ready before.
    std::vector<std::pair<double, int64_t>> last_ends;  // (end, chunk)
    for (const auto& [chunk, ends] : pass_end) {
      double end = 0;
      for (const auto& [micro_batch, e] : ends) end = std::max(end, e);
      last_ends.emplace_back(end, chunk);
    }
    std::sort(last_ends.begin(), last_ends.end());
    if (!plan.training || stage.buckets.empty()) last_ends = {{timeline.stages[s].passes_end_seconds, 0}};
    std::vector<std::vector<double>> lead(static_cast<size_t>(chunks));  // per chunk, per unfused bucket
    std::map<int64_t, size_t> pass_of_chunk;
    for (const auto& [raw_end, chunk] : last_ends) {
      FusionPass pass;
      pass.chunk = chunk;
      pass.held = plan.training ? BucketContentionSeconds(stage, chunks, true, chunk) : 0.0;
      pass.end = raw_end - pass.held;
      double duration = 0;
      lead[static_cast<size_t>(chunk)] = BucketLeadSeconds(stage, chunks, &duration, chunk);
      pass.start = pass.end - duration;
      pass.compute = FinalGradientComputeSeconds(stage, chunks, chunk);
      pass.other_held = plan.training ? BucketContentionSeconds(stage, chunks, false, chunk) : 0.0;
      for (const auto& [micro_batch, end] : pass_end[chunk])
        if (end < raw_end) pass.earlier_ends.push_back(end - pass.other_held);
      pass_of_chunk[chunk] = fs.passes.size();
      fs.passes.push_back(std::move(pass));
    }
    const std::vector<int64_t> chunk_of = BucketChunks(stage, chunks);
    std::map<int, std::vector<std::pair<size_t, FusionGradient>>> by_list;
    std::map<int, const GradientBucket*> first_of_list;
    for (const GradientBucket& bucket : stage.buckets) {
      FusionGradient g;
      g.tensor = bucket.parameters.front();
      g.name = graph.tensor(g.tensor).name;
      g.bytes = bucket.bytes;
      g.elements = bucket.elements;
      const size_t b = static_cast<size_t>(&bucket - stage.buckets.data());
      g.pass = pass_of_chunk.at(chunk_of[b]);
      g.ready = fs.passes[g.pass].end - lead[static_cast<size_t>(chunk_of[b])][b];
      by_list[bucket.list].emplace_back(bucket.position, g);
      first_of_list.emplace(bucket.list, &bucket);
    }
    for (auto& [index, gradients] : by_list) {
      std::sort(gradients.begin(), gradients.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      const GradientBucket& first = *first_of_list[index];
      FusionList list;
      list.collective = first.collective;
      list.fusion_id = graph.tensor(first.parameters.front()).comm_fusion;
      list.every_micro_batch = first.every_micro_batch;
      list.group_size = stage.groups[first.group].size;
      for (auto& [position, g] : gradients) list.gradients.push_back(std::move(g));
      const GroupPlacement placement = stage.groups[first.group].placement;
      const Collective c = first.collective;
      list.seconds = [cluster, overrides, placement, c](double bytes) {
        return CollectiveSeconds(c, ChooseAlgorithm(c, bytes, placement, *cluster, *overrides), bytes, placement,
                                 *cluster);
      };
      list.compute_share = [cluster, overrides, placement, c](double bytes) {
        return TimeCollective(c, ChooseAlgorithm(c, bytes, placement, *cluster, *overrides), bytes, placement, *cluster)
            .compute_share;
      };
      fs.lists.push_back(std::move(list));
    }
    problem.stages.push_back(std::move(fs));
  }
  return problem;
}

FusionEstimate Estimate(const FusionProblem& problem, Collective op, const FusionSetting& setting) {
  FusionEstimate estimate;
  estimate.step_seconds = -1;
  for (const FusionStage& stage : problem.stages) {
    std::vector<FusionBucket> buckets;  // the last micro-batch's, then the others'
    std::vector<const FusionList*> lists;
    for (size_t l = 0; l < stage.lists.size(); ++l) {
      const FusionList& list = stage.lists[l];
      lists.push_back(&list);
      std::vector<std::pair<size_t, size_t>> ranges;
      if (list.fusion_id == 0) {
        for (size_t i = 0; i < list.gradients.size(); ++i) ranges.emplace_back(i, i + 1);
      } else {
        const FusionSetting& own =
            list.collective == op
                ? setting
                : (list.collective == Collective::kReduceScatter ? problem.reducescatter : problem.allreduce);
        ranges = problem.megatron_ddp && problem.openstate && own.mode == FusionSetting::Mode::kDefault
                     ? MegatronDdpBuckets(ElementsOf(list), ChunksOf(list, stage), list.group_size)
                     : SplitIntoBuckets(BytesOf(list), own, problem.openstate, problem.data_parallel,
                                        problem.parallel_optimizer);
      }
      for (auto [begin, end] : ranges) buckets.push_back(MakeBucket(list, static_cast<int>(l), begin, end));
    }
    // The last micro-batch's buckets, in the stream's order.
    std::vector<size_t> finals(buckets.size());
    std::iota(finals.begin(), finals.end(), 0);
    std::stable_sort(finals.begin(), finals.end(),
                     [&](size_t a, size_t b) { return buckets[a].ready < buckets[b].ready; });
    // What a pass holds back from its compute beside its buckets (the
    // every-micro-batch ones alone for the other micro-batches' passes).
    auto contention = [&](size_t p, bool last) {
      const FusionPass& pass = stage.passes[p];
      std::vector<BucketBesidePass> beside;
      for (size_t i : finals) {
        const FusionBucket& b = buckets[i];
        const FusionList& list = *lists[b.list];
        if (b.pass == p && (last || list.every_micro_batch))
          beside.push_back({pass.end - b.ready, list.seconds(b.bytes), list.compute_share(b.bytes)});
      }
      return ContentionOfBuckets(pass.end - pass.start, pass.compute, beside);
    };
    // Every pass that runs buckets, in the order they end: each is
    // lengthened by its buckets' contention instead of the timeline's, which
    // moves every pass after it (and the buckets it readies). The
    // every-micro-batch buckets run after the other micro-batches' passes too.
    struct Moment {
      double at = 0;  // the pass's end in the timeline, without its contention
      size_t pass = 0;
      bool last = false;  // the chunk's last pass of the step
    };
    std::vector<Moment> moments;
    std::vector<double> change(stage.passes.size(), 0);  // per other micro-batch's pass of each chunk
    for (size_t p = 0; p < stage.passes.size(); ++p) {
      for (double end : stage.passes[p].earlier_ends) moments.push_back({end, p, false});
      moments.push_back({stage.passes[p].end, p, true});
      if (!stage.passes[p].earlier_ends.empty()) change[p] = contention(p, false) - stage.passes[p].other_held;
    }
    std::stable_sort(moments.begin(), moments.end(), [](const Moment& a, const Moment& b) { return a.at < b.at; });
    double delay = 0;
    const size_t last_micro_batch = buckets.size();
    for (const Moment& m : moments) {
      const FusionPass& pass = stage.passes[m.pass];
      if (!m.last) {
        for (size_t i : finals) {
          const FusionBucket& b = buckets[i];
          if (b.pass != m.pass || !lists[b.list]->every_micro_batch) continue;
          FusionBucket copy = b;
          copy.ready = m.at - (pass.end - b.ready) + delay;
          buckets.push_back(copy);
        }
        delay += change[m.pass];
        continue;
      }
      const double held = contention(m.pass, true);
      for (size_t i = 0; i < last_micro_batch; ++i)
        if (buckets[i].pass == m.pass) buckets[i].ready += delay;
      delay += held - pass.held;
    }
    const double passes_end = stage.last().end + stage.last().held + delay;
    const double stream_end = std::max(RunStream(buckets, lists), passes_end);
    const double end = stream_end + stage.optimizer;
    if (end > estimate.step_seconds) {
      estimate.step_seconds = end;
      estimate.critical_stage = stage.stage;
      estimate.tail_seconds = stream_end - passes_end;
      estimate.collectives = buckets.size();
      estimate.buckets = std::move(buckets);
    }
  }
  estimate.step_seconds = std::max(estimate.step_seconds, 0.0);
  return estimate;
}

double FinishTime(const FusionList& list, const std::vector<std::pair<size_t, size_t>>& ranges) {
  std::vector<FusionBucket> buckets;
  for (auto [begin, end] : ranges) buckets.push_back(MakeBucket(list, 0, begin, end));
  return RunStream(buckets, {&list});
}

std::vector<std::vector<std::pair<size_t, size_t>>> OptimalSplits(const FusionList& list, size_t max_buckets,
                                                                  bool first_alone_allowed) {
  const size_t n = list.gradients.size();
  const size_t K = std::min(max_buckets, n);
  std::vector<std::vector<std::pair<size_t, size_t>>> result(K);
  if (n == 0) return result;
  // Work in stream order: the order in which the gradients become ready.
  const bool reversed = n > 1 && list.gradients.front().ready > list.gradients.back().ready;
  auto at = [&](size_t i) -> const FusionGradient& { return list.gradients[reversed ? n - 1 - i : i]; };
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + at(i).bytes;
  // Bucket costs for every range [i, j).
  std::vector<std::vector<double>> cost(n, std::vector<double>(n + 1, kInf));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j <= n; ++j) cost[i][j] = list.seconds(prefix[j] - prefix[i]);
  // Gradient 0 of the fusion order alone is not a valid first bucket.
  if (!first_alone_allowed && n > 1) (reversed ? cost[n - 1][n] : cost[0][1]) = kInf;
  // best[k][j]: earliest finish of the first j gradients (stream order) in k buckets.
  std::vector<std::vector<double>> best(K + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<size_t>> from(K + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= K; ++k)
    for (size_t j = k; j <= n; ++j) {
      double ready = 0;
      for (size_t i = j; i-- > k - 1;) {
        ready = std::max(ready, at(i).ready);
        if (best[k - 1][i] == kInf || cost[i][j] == kInf) continue;
        const double finish = std::max(best[k - 1][i], ready) + cost[i][j];
        if (finish < best[k][j]) {
          best[k][j] = finish;
          from[k][j] = i;
        }
      }
    }
  for (size_t k = 1; k <= K; ++k) {
    if (best[k][n] == kInf) continue;
    std::vector<std::pair<size_t, size_t>> ranges;
    for (size_t j = n, kk = k; kk > 0; --kk) {
      const size_t i = from[kk][j];
      ranges.emplace_back(reversed ? n - j : i, reversed ? n - i : j);
      j = i;
    }
    std::sort(ranges.begin(), ranges.end());
    result[k - 1] = std::move(ranges);
  }
  return result;
}

std::vector<int64_t> SplitIndices(const std::vector<std::pair<size_t, size_t>>& ranges) {
  std::vector<int64_t> indices;
  for (size_t b = 0; b + 1 < ranges.size(); ++b) indices.push_back(static_cast<int64_t>(ranges[b].second) - 1);
  return indices;
}

std::pair<int, int> MainList(const FusionProblem& problem, Collective op) {
  const FusionSetting& current = op == Collective::kReduceScatter ? problem.reducescatter : problem.allreduce;
  const int64_t critical = Estimate(problem, op, current).critical_stage;
  std::pair<int, int> main{-1, -1};
  double main_bytes = -1;
  for (size_t s = 0; s < problem.stages.size(); ++s) {
    const FusionStage& stage = problem.stages[s];
    for (size_t l = 0; l < stage.lists.size(); ++l) {
      const FusionList& list = stage.lists[l];
      if (list.collective != op || list.fusion_id == 0) continue;
      // The critical stage's lists first, then the largest anywhere.
      const double score = list.Bytes() + (stage.stage == critical ? 1e30 : 0);
      if (score > main_bytes) {
        main_bytes = score;
        main = {static_cast<int>(s), static_cast<int>(l)};
      }
    }
  }
  return main;
}

}  // namespace shardlab
