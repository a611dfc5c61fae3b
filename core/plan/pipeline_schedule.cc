#include "core/plan/pipeline_schedule.h"

#include <algorithm>
#include <deque>

namespace shardlab {
namespace {

// Micro-batches in groups of `stages`; within a group every chunk in turn
// (forwards ascending, backwards descending), as Megatron interleaves.
std::vector<ScheduleItem> ChunkOrder(bool forward, int64_t stages, int64_t micro_batches, int64_t chunks) {
  std::vector<ScheduleItem> order;
  for (int64_t group = 0; group < micro_batches; group += stages) {
    const int64_t end = std::min(micro_batches, group + stages);
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t chunk = forward ? c : chunks - 1 - c;
      for (int64_t m = group; m < end; ++m) order.push_back({forward, m, chunk});
    }
  }
  return order;
}

// ZB-H1 from a 1F1B order: stage s runs micro-batch i's weight-gradient pass
// after the backward of micro-batch i + s (so its backwards, all the stages
// before it wait for, come sooner), the last s after its last backward.
std::vector<ScheduleItem> WithWeightGradients(const std::vector<ScheduleItem>& order, int64_t stage) {
  std::vector<ScheduleItem> out;
  std::deque<ScheduleItem> held;
  for (const ScheduleItem& item : order) {
    out.push_back(item);
    if (item.forward) continue;
    ScheduleItem w = item;
    w.weight_gradient = true;
    held.push_back(w);
    if (static_cast<int64_t>(held.size()) > stage) {
      out.push_back(held.front());
      held.pop_front();
    }
  }
  out.insert(out.end(), held.begin(), held.end());
  return out;
}

}  // namespace

std::string PassName(const ScheduleItem& item, int64_t chunks) {
  const char* kind = item.forward ? "F" : item.weight_gradient ? "W" : "B";
  return kind + std::to_string(item.micro_batch) + (chunks > 1 ? "." + std::to_string(item.chunk) : "");
}

std::vector<ScheduleItem> StageSchedule(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                        int64_t micro_batches, int64_t chunks) {
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
  // Interleaved (Megatron): (S - s - 1) * 2 + (v - 1) * S warm-up forwards,
  // then forward-backward pairs.
  const bool interleaved = chunks > 1;
  int64_t warmup = interleaved ? (stages - stage - 1) * 2 + (chunks - 1) * stages : stages - stage;
  warmup = std::min(std::max<int64_t>(warmup, interleaved ? 0 : 1), total);
  size_t f = 0, b = 0;
  for (; static_cast<int64_t>(f) < warmup; ++f) order.push_back(forwards[f]);
  while (f < forwards.size()) {
    if (interleaved) {
      order.push_back(forwards[f++]);
      order.push_back(backwards[b++]);
    } else {
      order.push_back(backwards[b++]);
      order.push_back(forwards[f++]);
    }
  }
  while (b < backwards.size()) order.push_back(backwards[b++]);
  if (SplitsBackward(schedule)) return WithWeightGradients(order, stage);
  return order;
}

}  // namespace shardlab
