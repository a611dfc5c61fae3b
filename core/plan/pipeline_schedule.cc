#include "core/plan/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stack>
#include <stdexcept>
#include <tuple>

namespace shardlab {
namespace {

// Interleaving visits micro-batches in groups: within a group every chunk in
// turn (forwards ascending, backwards descending). Groups hold `stages`
// micro-batches but the first, which also takes the micro_batch_num %
// pipeline_stages left over (MindSpore's InterleavedScheduler; Megatron,
// which requires no remainder, has the same groups).
int64_t FirstGroup(int64_t stages, int64_t micro_batches) {
  return micro_batches < stages ? micro_batches : stages + micro_batches % stages;
}

std::vector<ScheduleItem> ChunkOrder(bool forward, int64_t stages, int64_t micro_batches, int64_t chunks) {
  std::vector<ScheduleItem> order;
  for (int64_t group = 0, size = FirstGroup(stages, micro_batches); group < micro_batches;
       group += size, size = stages) {
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t chunk = forward ? c : chunks - 1 - c;
      for (int64_t m = group; m < group + size; ++m) order.push_back({forward, m, chunk});
    }
  }
  return order;
}

// ZB-H1 from a 1F1B order: stage s runs micro-batch i's weight-gradient pass
// after the backward of micro-batch i + s (so its backwards, all the stages
// before it wait for, come sooner), the last s after its last backward.
// A unit's weight-gradient pass goes after the unit.
std::vector<ScheduleItem> WithWeightGradients(const std::vector<ScheduleItem>& order, int64_t stage) {
  std::vector<ScheduleItem> out;
  std::deque<ScheduleItem> held;
  for (size_t i = 0; i < order.size(); ++i) {
    const ScheduleItem& item = order[i];
    out.push_back(item);
    if (!item.forward) {
      ScheduleItem w = item;
      w.weight_gradient = true;
      w.with_next = false;
      held.push_back(w);
    }
    if (item.with_next) continue;
    if (static_cast<int64_t>(held.size()) > stage) {
      out.push_back(held.front());
      held.pop_front();
    }
  }
  out.insert(out.end(), held.begin(), held.end());
  return out;
}

// zero_bubble_v on stage r of n: MindSpore's ZeroBubbleV scheduler
// (pipeline_transformer/zero_bubble_v.cc, ProcessStep1-8; its split
// backwards from detach_backward.cc, InferNeedDetachInfo; `offset` its
// ZBV_offset environment variable), DeepSeek's DualPipeV phases
// with MindSpore's order inside them: in the steady phases each backward
// before the forward it pairs with; in the cool-down only chunk 0's queued
// weight-gradient passes, one before each split backward (none on stage
// 0); the rest at the end, chunk 0's before chunk 1's, each chunk's in
// micro-batch order. A split backward queues its weight-gradient pass; an
// unsplit one runs it at once. `offset` splits that many fewer of each
// chunk's last backwards and defers the first `offset` cool-down
// weight-gradient passes to the end (the first stage defers them all, as
// MindSpore does).
// With `overlap` (MindSpore's pp_1f1b_overlap), each steady-phase forward
// runs together with the backward just before it (and that backward's
// weight-gradient pass), the last stage's first pair too.
std::vector<ScheduleItem> ZeroBubbleV(int64_t r, int64_t n, int64_t micro_batches, bool overlap, int64_t offset) {
  std::vector<ScheduleItem> out;
  int64_t forwards[2] = {0, 0}, backwards[2] = {0, 0};
  std::deque<ScheduleItem> weights[2];  // per chunk, in micro-batch order
  auto forward = [&](int64_t chunk) { out.push_back({true, forwards[chunk]++, chunk}); };
  auto weight = [&](int64_t chunk) {
    if (weights[chunk].empty()) throw std::logic_error("zero_bubble_v runs a weight-gradient pass it never split");
    out.push_back(weights[chunk].front());
    weights[chunk].pop_front();
  };
  // `paired`: the backward (with its W when unsplit) and the forward after it are one unit.
  auto backward = [&](int64_t chunk, bool split, bool paired = false) {
    const int64_t m = backwards[chunk]++;
    out.push_back({false, m, chunk, false, paired});
    if (split)
      weights[chunk].push_back({false, m, chunk, true});
    else
      out.push_back({false, m, chunk, true, paired});
  };
  for (int64_t i = 0; i < (n - r - 1) * 2; ++i) forward(0);
  for (int64_t i = 0; i < r + 1; ++i) {
    forward(0);
    forward(1);
  }
  for (int64_t i = 0; i < n - r - 1; ++i) {
    backward(1, true);
    weight(1);
    forward(1);
  }
  for (int64_t i = 0; i < micro_batches - 2 * n + r + 1; ++i) {
    backward(1, false, overlap);
    forward(0);
    backward(0, false, overlap);
    forward(1);
  }
  for (int64_t i = 0; i < n - r - 1; ++i) {
    backward(1, false);
    backward(0, false, overlap);
    forward(1);
  }
  // Split from here on: chunk 1's last (r + 1) / 2 - offset backwards, chunk
  // 0's last n - (r + 1) / 2 - offset; their weight-gradient passes wait for
  // the bubbles below.
  const int64_t split_from[2] = {micro_batches - std::max<int64_t>(n - (r + 1) / 2 - offset, 0),
                                 micro_batches - std::max<int64_t>((r + 1) / 2 - offset, 0)};
  for (int64_t i = 0; i < r + 1; ++i) {
    backward(1, backwards[1] >= split_from[1]);
    backward(0, backwards[0] >= split_from[0]);
  }
  for (int64_t i = 0; i < n - r - 1; ++i) {
    if (r != 0 && i >= offset) weight(0);
    backward(0, backwards[0] >= split_from[0]);
  }
  for (int64_t chunk : {0, 1})
    while (!weights[chunk].empty()) weight(chunk);
  return out;
}

// dualpipe on stage r of n: DeepSeek's DualPipe (deepseek-ai/DualPipe,
// dualpipe/dualpipe.py, DualPipe.step), DualPipeV's eight phases on each
// half of the stages: stage r runs as stage h = min(r, n - 1 - r) of n / 2,
// over the micro_batches / 2 of each direction. Its phase 0 is the direction
// in which it is stage h (the first half's chunk 0, the second half's chunk
// 1). Direction d's micro-batches are d x micro_batches / 2 and on. Split
// backwards queue their weight-gradient passes in one queue, oldest first
// (WeightGradStore). With `overlap`, each steady-phase forward runs together
// with the backward after it (with that backward's weight-gradient pass),
// except the first pair on the two middle stages.
std::vector<ScheduleItem> DualPipe(int64_t r, int64_t n, int64_t micro_batches, bool overlap) {
  const int64_t half_stages = n / 2, h = std::min(r, n - 1 - r), per_direction = micro_batches / 2;
  const int64_t flip = r >= half_stages ? 1 : 0;  // the chunk of phase 0
  const bool middle = h == half_stages - 1;
  std::vector<ScheduleItem> out;
  int64_t forwards[2] = {0, 0}, backwards[2] = {0, 0};
  std::deque<ScheduleItem> weights;
  auto forward = [&](int64_t phase, bool paired = false) {
    const int64_t c = phase ^ flip;
    out.push_back({true, c * per_direction + forwards[c]++, c, false, paired});
  };
  // `closes_unit`: the backward (with its weight-gradient pass) ends a unit the forward before it opened.
  auto backward = [&](int64_t phase, bool split, bool closes_unit = false) {
    const int64_t c = phase ^ flip, m = c * per_direction + backwards[c]++;
    out.push_back({false, m, c, false, closes_unit && !split});
    if (split)
      weights.push_back({false, m, c, true});
    else
      out.push_back({false, m, c, true});
  };
  auto weight = [&] {
    out.push_back(weights.front());
    weights.pop_front();
  };
  for (int64_t i = 0; i < (half_stages - h - 1) * 2; ++i) forward(0);
  for (int64_t i = 0; i < h + 1; ++i) {
    forward(0);
    forward(1);
  }
  for (int64_t i = 0; i < half_stages - h - 1; ++i) {
    backward(1, true);
    weight();
    forward(1);
  }
  for (int64_t i = 0; i < per_direction - n + h + 1; ++i) {
    const bool paired = overlap && !(i == 0 && middle);
    forward(0, paired);
    backward(1, false, paired);
    forward(1, overlap);
    backward(0, false, overlap);
  }
  for (int64_t i = 0; i < half_stages - h - 1; ++i) {
    backward(1, false);
    forward(1, overlap);
    backward(0, false, overlap);
  }
  // The last h + 1 backwards of each phase: split from the middle on.
  bool split = false;
  for (int64_t i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) split = true;
    backward(1, split);
    if (i == (h + 1) / 2 && h % 2 == 0) split = true;
    backward(0, split);
  }
  for (int64_t i = 0; i < half_stages - h - 1; ++i) {
    weight();
    backward(0, true);
  }
  while (!weights.empty()) weight();
  return out;
}

// The micro-batches of each cycle of a sequence-pipelined order
// (SeqpipeScheduler::ComputeCycleList and SeqvppScheduler's): cycles of
// `size` micro-batches, the remainder handed out one each from the first
// cycle on; seqpipe's cycles fill the pipeline with micro-batches
// (size pipeline_stages), seqvpp's with sequence chunks (pipeline_stages /
// seq_chunks).
std::vector<int64_t> SequenceCycles(PipelineSchedule schedule, int64_t stages, int64_t micro_batches,
                                    int64_t seq_chunks) {
  const int64_t size = schedule == PipelineSchedule::kSeqPipe ? stages : std::max<int64_t>(1, stages / seq_chunks);
  if (micro_batches < size) return {micro_batches};
  std::vector<int64_t> cycles(static_cast<size_t>(micro_batches / size), size);
  for (int64_t i = 0; i < micro_batches % size; ++i) ++cycles[static_cast<size_t>(i) % cycles.size()];
  return cycles;
}

// MindSpore's sequence-pipelined order on `stage` (SeqpipeScheduler::
// ExtractDataStruct and MakeExecuteOrder): forwards cycle by cycle, in a
// cycle chunk by chunk, micro-batch by micro-batch, each micro-batch's
// sequence chunks in order; after the warm-up each forward is followed by
// a backward of the oldest micro-batch in flight, on the pass it ran last
// (its sequence chunks and chunks in reverse). A pass's micro_batch is
// micro-batch x seq_chunks + sequence chunk.
std::vector<ScheduleItem> SequenceChunkOrder(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                             int64_t micro_batches, int64_t chunks, int64_t seq_chunks) {
  const std::vector<int64_t> cycles = SequenceCycles(schedule, stages, micro_batches, seq_chunks);
  std::vector<ScheduleItem> forwards;
  for (int64_t first = 0, c = 0; c < static_cast<int64_t>(cycles.size()); first += cycles[c++])
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t m = first; m < first + cycles[c]; ++m)
        for (int64_t j = 0; j < seq_chunks; ++j) forwards.push_back({true, m * seq_chunks + j, chunk});
  const int64_t bias = chunks == 1 || schedule == PipelineSchedule::kSeqSmartVpp ? 1 : 2;
  const auto total = static_cast<int64_t>(forwards.size());
  const int64_t warmup =
      std::min((stages - 1 - stage) * bias + (chunks - 1) * cycles.front() * seq_chunks + seq_chunks - 1, total - 1);
  std::vector<ScheduleItem> order;
  std::deque<int64_t> in_flight;                    // micro-batch of each forward not yet backed
  std::map<int64_t, std::stack<ScheduleItem>> ran;  // per micro-batch, its forwards not yet backed
  auto backward = [&] {
    const int64_t m = in_flight.front();
    in_flight.pop_front();
    ScheduleItem b = ran[m].top();
    ran[m].pop();
    b.forward = false;
    order.push_back(b);
  };
  for (int64_t i = 0; i < total; ++i) {
    const ScheduleItem& f = forwards[static_cast<size_t>(i)];
    order.push_back(f);
    in_flight.push_back(f.micro_batch / seq_chunks);
    ran[f.micro_batch / seq_chunks].push(f);
    if (i >= warmup) backward();
  }
  while (!in_flight.empty()) backward();
  return order;
}

}  // namespace

int64_t VirtualStage(PipelineSchedule schedule, int64_t chunk, int64_t stage, int64_t stages) {
  if (RunsTwoChunks(schedule) && chunk == 1) return 2 * stages - 1 - stage;
  return chunk * stages + stage;
}

int64_t StageOfVirtual(PipelineSchedule schedule, int64_t virtual_stage, int64_t stages) {
  if (RunsTwoChunks(schedule) && virtual_stage >= stages) return 2 * stages - 1 - virtual_stage;
  return virtual_stage % stages;
}

std::optional<int64_t> AdjacentVirtualStage(PipelineSchedule schedule, bool next, int64_t virtual_stage, int64_t stages,
                                            int64_t chunks) {
  const int64_t v = next ? virtual_stage + 1 : virtual_stage - 1;
  if (v < 0 || v >= stages * chunks) return std::nullopt;
  // dualpipe's second direction is a pipeline of its own.
  if (schedule == PipelineSchedule::kDualPipe && std::min(v, virtual_stage) == stages - 1) return std::nullopt;
  return v;
}

std::string PassName(const ScheduleItem& item, int64_t chunks, int64_t seq_chunks) {
  const char* kind = item.forward ? "F" : item.weight_gradient ? "W" : "B";
  const std::string micro_batch = seq_chunks > 1 ? std::to_string(item.micro_batch / seq_chunks) + "s" +
                                                       std::to_string(item.micro_batch % seq_chunks)
                                                 : std::to_string(item.micro_batch);
  return kind + micro_batch + (chunks > 1 ? "." + std::to_string(item.chunk) : "");
}

std::vector<ScheduleItem> StageSchedule(PipelineSchedule schedule, int64_t stage, int64_t stages, int64_t micro_batches,
                                        int64_t chunks, bool overlap, int64_t seq_chunks, int64_t zbv_offset) {
  if (schedule == PipelineSchedule::kZeroBubbleV) return ZeroBubbleV(stage, stages, micro_batches, overlap, zbv_offset);
  if (schedule == PipelineSchedule::kDualPipe) return DualPipe(stage, stages, micro_batches, overlap);
  if (RunsSequenceChunks(schedule))
    return SequenceChunkOrder(schedule, stage, stages, micro_batches, chunks, seq_chunks);
  const auto forwards = ChunkOrder(true, stages, micro_batches, chunks);
  const auto backwards = ChunkOrder(false, stages, micro_batches, chunks);
  std::vector<ScheduleItem> order;
  if (schedule == PipelineSchedule::kGPipe) {
    order = forwards;
    order.insert(order.end(), backwards.begin(), backwards.end());
    return order;
  }
  const int64_t total = static_cast<int64_t>(forwards.size());
  // MindSpore's 1F1B: S - s warm-up forwards, then backward-forward pairs.
  // Interleaved: (S - s - 1) * 2 + (v - 1) * G warm-up forwards, G the first
  // group's micro-batches (S when S divides M), then forward-backward pairs. Overlapped, the pairs become units that
  // wait for both their inputs: a unit's backward comes from the next
  // stage's unit whose forward came from this stage, so adjacent stages'
  // warm-ups differ by two (interleaved's already do; 1F1B's then start
  // 2(S - s) - 1 forwards ahead) and the exchange spans two units, not one;
  // and interleaved warms up one forward more, so that every unit holds two
  // micro-batches (the last stage's too).
  const bool interleaved = chunks > 1;
  int64_t warmup =
      interleaved ? (stages - stage - 1) * 2 + (chunks - 1) * FirstGroup(stages, micro_batches) : stages - stage;
  if (overlap) warmup = interleaved ? warmup + 1 : 2 * (stages - stage) - 1;
  warmup = std::min(std::max<int64_t>(warmup, interleaved ? 0 : 1), total);
  size_t f = 0, b = 0;
  for (; static_cast<int64_t>(f) < warmup; ++f) order.push_back(forwards[f]);
  auto pair = [&] {
    ScheduleItem& first = order[order.size() - 2];
    first.with_next = overlap && first.micro_batch != order.back().micro_batch;
  };
  while (f < forwards.size()) {
    if (interleaved) {
      order.push_back(forwards[f++]);
      order.push_back(backwards[b++]);
    } else {
      order.push_back(backwards[b++]);
      order.push_back(forwards[f++]);
    }
    pair();
  }
  while (b < backwards.size()) order.push_back(backwards[b++]);
  if (SplitsBackward(schedule)) return WithWeightGradients(order, stage);
  return order;
}

bool RunsThrough(PipelineSchedule schedule, int64_t stages, int64_t micro_batches, int64_t chunks, bool overlap,
                 int64_t seq_chunks) {
  std::vector<std::vector<ScheduleItem>> orders;
  for (int64_t s = 0; s < stages; ++s)
    orders.push_back(StageSchedule(schedule, s, stages, micro_batches, chunks, overlap, seq_chunks));
  std::set<std::tuple<bool, int64_t, int64_t>> done;  // (forward, micro-batch, virtual stage)
  auto ready = [&](const ScheduleItem& i, int64_t s) {
    const int64_t v = VirtualStage(schedule, i.chunk, s, stages);
    if (i.weight_gradient) return true;
    const std::optional<int64_t> input = AdjacentVirtualStage(schedule, !i.forward, v, stages, chunks);
    if (i.forward) return !input || done.count({true, i.micro_batch, *input}) == 1;
    return done.count({true, i.micro_batch, v}) == 1 && (!input || done.count({false, i.micro_batch, *input}) == 1);
  };
  std::vector<size_t> next(static_cast<size_t>(stages), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t s = 0; s < orders.size(); ++s) {
      const auto& order = orders[s];
      if (next[s] == order.size()) continue;
      const size_t end = UnitEnd(order, next[s]);
      bool all = true;
      for (size_t k = next[s]; k < end; ++k) all = all && ready(order[k], static_cast<int64_t>(s));
      if (!all) continue;
      for (size_t k = next[s]; k < end; ++k)
        if (!order[k].weight_gradient)
          done.insert({order[k].forward, order[k].micro_batch,
                       VirtualStage(schedule, order[k].chunk, static_cast<int64_t>(s), stages)});
      next[s] = end;
      moved = true;
    }
  }
  for (size_t s = 0; s < orders.size(); ++s)
    if (next[s] != orders[s].size()) return false;
  return true;
}

size_t UnitEnd(const std::vector<ScheduleItem>& order, size_t begin) {
  size_t end = begin;
  while (end + 1 < order.size() && order[end].with_next) ++end;
  return end + 1;
}

}  // namespace shardlab
