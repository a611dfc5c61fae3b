#include "core/plan/pipeline_schedule.h"

#include <map>
#include <set>
#include <tuple>

#include <catch2/catch.hpp>

#include "core/report/run_summary.h"

namespace shardlab {
namespace {

std::string Render(const std::vector<ScheduleItem>& items) {
  std::string out;
  bool joined = false;  // the item before runs with this one (a unit)
  for (const auto& i : items) {
    out += (out.empty() ? "" : joined ? "+" : " ") + PassName(i, i.chunk + 1);
    joined = i.with_next;
  }
  return out;
}

TEST_CASE("1F1B warms up with S - s forwards, then alternates (MindSpore's order)") {
  CHECK(Render(StageSchedule(PipelineSchedule::k1F1B, 0, 4, 6, 1)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  CHECK(Render(StageSchedule(PipelineSchedule::k1F1B, 3, 4, 6, 1)) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  CHECK(Render(StageSchedule(PipelineSchedule::k1F1B, 1, 4, 2, 1)) == "F0 F1 B0 B1");
}

TEST_CASE("GPipe runs every forward, then every backward") {
  CHECK(Render(StageSchedule(PipelineSchedule::kGPipe, 2, 4, 3, 1)) == "F0 F1 F2 B0 B1 B2");
}

TEST_CASE("interleaved 1F1B visits chunks in groups of S micro-batches, the first taking the remainder") {
  const auto order = StageSchedule(PipelineSchedule::kInterleaved, 1, 2, 4, 2);
  CHECK(order.size() == 16);
  CHECK(Render(std::vector<ScheduleItem>(order.begin(), order.begin() + 4)) == "F0 F1 F0.1 B0.1");
  int forwards = 0;
  for (const auto& i : order) forwards += i.forward;
  CHECK(forwards == 8);
  // 5 micro-batches over 2 stages: a first group of 3 (MindSpore's InterleavedScheduler), then one of 2;
  // stage 0 warms up (2 - 0 - 1) * 2 + (2 - 1) * 3 = 5 forwards.
  CHECK(Render(StageSchedule(PipelineSchedule::kInterleaved, 0, 2, 5, 2)) ==
        "F0 F1 F2 F0.1 F1.1 F2.1 B0.1 F3 B1.1 F4 B2.1 F3.1 B0 F4.1 B1 B2 B3.1 B4.1 B3 B4");
}

TEST_CASE("interleaved orders run through for every micro_batch_num of at least pipeline_stages") {
  // With groups of S and a partial last one, S = 4, M = 5, v = 3 and S = 5, M = 7, v = 2 deadlocked.
  for (int64_t stages = 2; stages <= 8; ++stages)
    for (int64_t chunks = 2; chunks <= 4; ++chunks)
      for (int64_t micro_batches = stages; micro_batches <= 6 * stages + 2; ++micro_batches)
        for (bool overlap : {false, true}) {
          INFO(stages << " stages, " << micro_batches << " micro-batches, " << chunks << " chunks, overlap "
                      << overlap);
          CHECK(RunsThrough(PipelineSchedule::kInterleaved, stages, micro_batches, chunks, overlap));
        }
  for (PipelineSchedule schedule : {PipelineSchedule::k1F1B, PipelineSchedule::kZeroBubbleH1})
    for (int64_t stages = 1; stages <= 8; ++stages)
      for (int64_t micro_batches = stages; micro_batches <= 3 * stages + 2; ++micro_batches)
        for (bool overlap : {false, true}) CHECK(RunsThrough(schedule, stages, micro_batches, 1, overlap));
  for (int64_t stages = 2; stages <= 8; ++stages)
    for (int64_t micro_batches = 2 * stages; micro_batches <= 4 * stages + 2; ++micro_batches)
      for (bool overlap : {false, true})
        CHECK(RunsThrough(PipelineSchedule::kZeroBubbleV, stages, micro_batches, 2, overlap));
}

TEST_CASE("ZB-H1 follows 1F1B, micro-batch i's weight-gradient pass after micro-batch i + s's backward on stage s") {
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleH1, 0, 4, 6, 1)) ==
        "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 B3 W3 B4 W4 B5 W5");
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleH1, 2, 4, 6, 1)) ==
        "F0 F1 B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 B5 W3 W4 W5");
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleH1, 3, 4, 2, 1)) == "F0 B0 F1 B1 W0 W1");
}

TEST_CASE("zero_bubble_v runs MindSpore's ZeroBubbleV order over a V of two chunks") {
  // The last of 2 stages (the V's turn), 4 micro-batches: (F0, F1) twice, then
  // backward-forward pairs (backwards unsplit: W at once), then its last
  // backwards split, their Ws at the end, chunk 0's first.
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleV, 1, 2, 4, 2)) ==
        "F0 F0.1 F1 F1.1 B0.1 W0.1 F2 B0 W0 F2.1 B1.1 W1.1 F3 B1 W1 F3.1 B2.1 W2.1 B2 W2 B3.1 B3 W3 W3.1");
  // The first stage warms up with 2 forwards of chunk 0, splits its first
  // backward, and keeps every cool-down W to the end (MindSpore's offset of
  // stages - 1 on stage 0).
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleV, 0, 2, 4, 2)) ==
        "F0 F1 F2 F0.1 B0.1 W0.1 F1.1 B1.1 W1.1 F3 B0 W0 F2.1 B2.1 W2.1 B1 W1 F3.1 B3.1 W3.1 B2 B3 W2 W3");
  // Stage 1 of 4, 8 micro-batches: in the cool-down chunk 0's oldest W before each split backward.
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleV, 1, 4, 8, 2)) ==
        "F0 F1 F2 F3 F4 F0.1 F5 F1.1 B0.1 W0.1 F2.1 B1.1 W1.1 F3.1 B2.1 W2.1 F6 B0 W0 F4.1 B3.1 W3.1 F7 B1 W1 F5.1 "
        "B4.1 W4.1 B2 W2 F6.1 B5.1 W5.1 B3 W3 F7.1 B6.1 W6.1 B4 W4 B7.1 B5 W5 B6 W6 B7 W7 W7.1");
  // Stage 2 of 4: an even stage past the first splits one chunk-1 backward and two of chunk 0's in its
  // last backward pairs (floor and ceiling of (r + 1) / 2).
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleV, 2, 4, 8, 2)) ==
        "F0 F1 F2 F0.1 F3 F1.1 F4 F2.1 B0.1 W0.1 F3.1 B1.1 W1.1 F5 B0 W0 F4.1 B2.1 W2.1 F6 B1 W1 F5.1 "
        "B3.1 W3.1 F7 B2 W2 F6.1 B4.1 W4.1 B3 W3 F7.1 B5.1 W5.1 B4 W4 B6.1 W6.1 B5 B7.1 B6 W5 B7 W6 W7 W7.1");
  // MindSpore's ZBV_offset 1: stage 2 splits none of chunk 1's last backwards (B0.1 of the nB1W1
  // phase stays split) and only chunk 0's last two, and runs its cool-down backward without the W
  // before it; stage 0 splits chunk 0's last three, not four.
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleV, 2, 4, 8, 2, false, 1, 1)) ==
        "F0 F1 F2 F0.1 F3 F1.1 F4 F2.1 B0.1 W0.1 F3.1 B1.1 W1.1 F5 B0 W0 F4.1 B2.1 W2.1 F6 B1 W1 F5.1 "
        "B3.1 W3.1 F7 B2 W2 F6.1 B4.1 W4.1 B3 W3 F7.1 B5.1 W5.1 B4 W4 B6.1 W6.1 B5 W5 B7.1 W7.1 B6 B7 W6 W7");
  const std::string stage0 = Render(StageSchedule(PipelineSchedule::kZeroBubbleV, 0, 4, 8, 2, false, 1, 1));
  const std::string cool_down = "B7.1 W7.1 B4 W4 B5 B6 B7 W5 W6 W7";
  CHECK(stage0.substr(stage0.size() - cool_down.size()) == cool_down);
  for (int64_t offset : {0, 1, 2, 5})
    for (int64_t stages : {2, 3, 4, 8})
      for (int64_t micro_batches : {2 * stages, 2 * stages + 1, 3 * stages + 2})
        for (int64_t s = 0; s < stages; ++s) {
          INFO(stages << " stages, " << micro_batches << " micro-batches, stage " << s << ", offset " << offset);
          const auto order =
              StageSchedule(PipelineSchedule::kZeroBubbleV, s, stages, micro_batches, 2, false, 1, offset);
          // Every micro-batch once per chunk and pass kind; a backward after its forward, a W after its backward.
          std::map<std::tuple<int64_t, int64_t, int>, int> seen;
          for (const ScheduleItem& i : order) {
            const int kind = i.forward ? 0 : i.weight_gradient ? 2 : 1;
            if (kind > 0) CHECK(seen.count({i.micro_batch, i.chunk, kind - 1}) == 1);
            CHECK(++seen[{i.micro_batch, i.chunk, kind}] == 1);
          }
          CHECK(order.size() == static_cast<size_t>(6 * micro_batches));
        }
  CHECK(VirtualStage(PipelineSchedule::kZeroBubbleV, 1, 0, 4) == 7);
  CHECK(VirtualStage(PipelineSchedule::kZeroBubbleV, 1, 3, 4) == 4);
  CHECK(StageOfVirtual(PipelineSchedule::kZeroBubbleV, 5, 4) == 2);
  CHECK(StageOfVirtual(PipelineSchedule::kInterleaved, 5, 4) == 1);
}

TEST_CASE("dualpipe runs DeepSeek's DualPipe order: two model copies fed from opposite ends") {
  // 4 stages, 8 micro-batches: 0-3 enter stage 0 (chunk 0), 4-7 enter stage 3
  // (chunk 1, the mirrored copy). Each stage as deepseek-ai/DualPipe's
  // DualPipe.step issues its passes (an independent replay of its phases
  // by rank): the first half's phase 0 is chunk 0, the second half's chunk 1.
  const char* expected[] = {
      "F0 F1 F2 F4.1 B4.1 W4.1 F5.1 F3 B5.1 W5.1 F6.1 B0 W0 B6.1 W6.1 F7.1 B1 W1 B7.1 W7.1 B2 W2 B3 W3",
      "F0 F4.1 F1 F5.1 F2 B4.1 W4.1 F6.1 B0 W0 F3 B5.1 W5.1 F7.1 B1 W1 B6.1 W6.1 B2 W2 B7.1 B3 W7.1 W3",
      "F4.1 F0 F5.1 F1 F6.1 B0 W0 F2 B4.1 W4.1 F7.1 B1 W1 F3 B5.1 W5.1 B2 W2 B6.1 W6.1 B3 B7.1 W3 W7.1",
      "F4.1 F5.1 F6.1 F0 B0 W0 F1 F7.1 B1 W1 F2 B4.1 W4.1 B2 W2 F3 B5.1 W5.1 B3 W3 B6.1 W6.1 B7.1 W7.1"};
  for (int64_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(Render(StageSchedule(PipelineSchedule::kDualPipe, s, 4, 8, 2)) == expected[s]);
  }
  // Overlapped: each steady-state forward with the backward after it (that
  // backward's W inside the unit), but the middle stages' first pair.
  CHECK(Render(StageSchedule(PipelineSchedule::kDualPipe, 0, 4, 10, 2, true)) ==
        "F0 F1 F2 F5.1 B5.1 W5.1 F6.1 F3+B6.1+W6.1 F7.1+B0+W0 F4+B7.1+W7.1 F8.1+B1+W1 B8.1 W8.1 F9.1+B2+W2 B9.1 "
        "W9.1 B3 W3 B4 W4");
  CHECK(Render(StageSchedule(PipelineSchedule::kDualPipe, 1, 4, 10, 2, true)) ==
        "F0 F5.1 F1 F6.1 F2 B5.1 W5.1 F7.1+B0+W0 F3+B6.1+W6.1 F8.1+B1+W1 F4+B7.1+W7.1 F9.1+B2+W2 B8.1 W8.1 B3 W3 "
        "B9.1 B4 W9.1 W4");
  for (int64_t stages = 2; stages <= 8; stages += 2)
    for (int64_t micro_batches = 2 * stages; micro_batches <= 4 * stages + 2; micro_batches += 2)
      for (bool overlap : {false, true}) {
        INFO(stages << " stages, " << micro_batches << " micro-batches, overlap " << overlap);
        CHECK(RunsThrough(PipelineSchedule::kDualPipe, stages, micro_batches, 2, overlap));
        for (int64_t s = 0; s < stages; ++s) {
          // Each micro-batch once per pass kind, on its direction's chunk only.
          std::map<std::tuple<int64_t, int>, int> seen;
          for (const ScheduleItem& i : StageSchedule(PipelineSchedule::kDualPipe, s, stages, micro_batches, 2)) {
            const int kind = i.forward ? 0 : i.weight_gradient ? 2 : 1;
            CHECK(i.chunk == (i.micro_batch < micro_batches / 2 ? 0 : 1));
            if (kind > 0) CHECK(seen.count({i.micro_batch, kind - 1}) == 1);
            CHECK(++seen[{i.micro_batch, kind}] == 1);
          }
          CHECK(seen.size() == static_cast<size_t>(3 * micro_batches));
        }
      }
  // The two directions are pipelines of their own: nothing crosses between
  // virtual stages S - 1 (the first copy's end) and S (the second's start).
  CHECK(VirtualStage(PipelineSchedule::kDualPipe, 1, 3, 4) == 4);
  CHECK_FALSE(AdjacentVirtualStage(PipelineSchedule::kDualPipe, true, 3, 4, 2));
  CHECK_FALSE(AdjacentVirtualStage(PipelineSchedule::kDualPipe, false, 4, 4, 2));
  CHECK(AdjacentVirtualStage(PipelineSchedule::kDualPipe, true, 4, 4, 2) == 5);
  CHECK(AdjacentVirtualStage(PipelineSchedule::kZeroBubbleV, true, 3, 4, 2) == 4);
  CHECK_FALSE(AdjacentVirtualStage(PipelineSchedule::kZeroBubbleV, true, 7, 4, 2));
  CHECK_FALSE(AdjacentVirtualStage(PipelineSchedule::k1F1B, false, 0, 4, 1));
}

TEST_CASE("overlapped orders pair each forward with another micro-batch's backward") {
  // 1F1B: stage s warms up 2(S - s) - 1 forwards, so that a unit's backward
  // comes from the next stage's unit two units after the forward it needed.
  CHECK(Render(StageSchedule(PipelineSchedule::k1F1B, 3, 4, 6, 1, true)) == "F0 B0+F1 B1+F2 B2+F3 B3+F4 B4+F5 B5");
  CHECK(Render(StageSchedule(PipelineSchedule::k1F1B, 2, 4, 6, 1, true)) == "F0 F1 F2 B0+F3 B1+F4 B2+F5 B3 B4 B5");
  // Without pipelining: Megatron's combined 1F1B (F0, then F(i+1) with B(i)).
  CHECK(Render(StageSchedule(PipelineSchedule::k1F1B, 0, 1, 3, 1, true)) == "F0 B0+F1 B1+F2 B2");
  // ZB-H1: the weight-gradient pass goes after the unit.
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleH1, 0, 2, 4, 1, true)) ==
        "F0 F1 F2 B0+F3 W0 B1 W1 B2 W2 B3 W3");
  // zero_bubble_v (pp_1f1b_overlap): each steady-state forward with the backward before it, an unsplit
  // backward's W inside its unit, the last stage's first pair too.
  CHECK(Render(StageSchedule(PipelineSchedule::kZeroBubbleV, 1, 2, 4, 2, true)) ==
        "F0 F0.1 F1 F1.1 B0.1+W0.1+F2 B0+W0+F2.1 B1.1+W1.1+F3 B1+W1+F3.1 B2.1 W2.1 B2 W2 B3.1 B3 W3 W3.1");
  const PipelineSchedule schedules[] = {PipelineSchedule::k1F1B, PipelineSchedule::kInterleaved,
                                        PipelineSchedule::kZeroBubbleH1, PipelineSchedule::kZeroBubbleV};
  for (PipelineSchedule schedule : schedules)
    for (int64_t stages : {1, 2, 3, 4, 8})
      for (int64_t micro_batches : {2 * stages, 2 * stages + 1, 3 * stages + 2})
        for (int64_t s = 0; s < stages; ++s) {
          const bool v = schedule == PipelineSchedule::kZeroBubbleV;
          if (v && stages < 2) continue;
          const int64_t chunks = v || schedule == PipelineSchedule::kInterleaved ? 2 : 1;
          INFO(ToString(schedule) << ", " << stages << " stages, " << micro_batches << " micro-batches, stage " << s);
          const auto plain = StageSchedule(schedule, s, stages, micro_batches, chunks);
          const auto order = StageSchedule(schedule, s, stages, micro_batches, chunks, true);
          // The same passes, each once.
          auto key = [](const ScheduleItem& i) {
            return std::make_tuple(i.micro_batch, i.chunk, i.forward, i.weight_gradient);
          };
          std::map<std::tuple<int64_t, int64_t, bool, bool>, int> plain_passes, passes;
          for (const ScheduleItem& i : plain) ++plain_passes[key(i)];
          for (const ScheduleItem& i : order) ++passes[key(i)];
          CHECK(passes == plain_passes);
          int units = 0;
          for (size_t begin = 0; begin < order.size();) {
            const size_t end = UnitEnd(order, begin);
            if (end - begin > 1) {
              ++units;
              // One forward, one backward of another micro-batch, and that backward's W or none.
              int forwards = 0, backwards = 0, weights = 0;
              int64_t forward_micro = -1, backward_micro = -1;
              for (size_t k = begin; k < end; ++k) {
                const ScheduleItem& i = order[k];
                if (i.forward) {
                  ++forwards;
                  forward_micro = i.micro_batch;
                } else if (i.weight_gradient) {
                  ++weights;
                  CHECK(i.micro_batch == backward_micro);
                } else {
                  ++backwards;
                  backward_micro = i.micro_batch;
                }
              }
              CHECK(forwards == 1);
              CHECK(backwards == 1);
              CHECK(weights <= 1);
              CHECK(forward_micro != backward_micro);
            }
            begin = end;
          }
          if (schedule != PipelineSchedule::kZeroBubbleV) CHECK(units > 0);
        }
}

std::string RenderSequenceChunks(const std::vector<ScheduleItem>& items, int64_t chunks, int64_t seq_chunks) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : " ") + PassName(i, chunks, seq_chunks);
  return out;
}

TEST_CASE("seqpipe runs each micro-batch's sequence chunks in order, their backwards in reverse (MindSpore's order)") {
  // Stage s warms up (S - s - 1) + n - 1 passes past the first; each backward then takes the oldest
  // micro-batch's last pass.
  CHECK(RenderSequenceChunks(StageSchedule(PipelineSchedule::kSeqPipe, 0, 2, 2, 1, false, 2), 1, 2) ==
        "F0s0 F0s1 F1s0 B0s1 F1s1 B0s0 B1s1 B1s0");
  CHECK(RenderSequenceChunks(StageSchedule(PipelineSchedule::kSeqPipe, 1, 2, 2, 1, false, 2), 1, 2) ==
        "F0s0 F0s1 B0s1 F1s0 B0s0 F1s1 B1s1 B1s0");
  // One sequence chunk: 1F1B, and with chunks MindSpore's interleaving warm-up (bias 2).
  for (int64_t stages = 1; stages <= 6; ++stages)
    for (int64_t micro_batches = stages; micro_batches <= 3 * stages; ++micro_batches)
      for (int64_t s = 0; s < stages; ++s)
        CHECK(Render(StageSchedule(PipelineSchedule::kSeqPipe, s, stages, micro_batches, 1, false, 1)) ==
              Render(StageSchedule(PipelineSchedule::k1F1B, s, stages, micro_batches, 1)));
  // seqvpp: cycles of S / n micro-batches (here 1), chunk by chunk; bias 2. seqsmartvpp: bias 1.
  CHECK(RenderSequenceChunks(StageSchedule(PipelineSchedule::kSeqVpp, 1, 2, 2, 2, false, 2), 2, 2) ==
        "F0s0.0 F0s1.0 F0s0.1 F0s1.1 B0s1.1 F1s0.0 B0s0.1 F1s1.0 B0s1.0 F1s0.1 B0s0.0 F1s1.1 B1s1.1 B1s0.1 B1s1.0 "
        "B1s0.0");
  CHECK(RenderSequenceChunks(StageSchedule(PipelineSchedule::kSeqSmartVpp, 0, 2, 2, 2, false, 2), 2, 2) ==
        "F0s0.0 F0s1.0 F0s0.1 F0s1.1 F1s0.0 B0s1.1 F1s1.0 B0s0.1 F1s0.1 B0s1.0 F1s1.1 B0s0.0 B1s1.1 B1s0.1 B1s1.0 "
        "B1s0.0");
}

TEST_CASE("sequence-pipelined orders run through, each stage's chunks of a sequence in order") {
  for (PipelineSchedule schedule :
       {PipelineSchedule::kSeqPipe, PipelineSchedule::kSeqVpp, PipelineSchedule::kSeqSmartVpp})
    for (int64_t stages = 1; stages <= 6; ++stages)
      for (int64_t seq_chunks = 1; seq_chunks <= 4; ++seq_chunks)
        for (int64_t chunks = schedule == PipelineSchedule::kSeqPipe ? 1 : 2; chunks <= 3; ++chunks)
          for (int64_t micro_batches = 1; micro_batches <= 2 * stages + 1; ++micro_batches) {
            if (schedule != PipelineSchedule::kSeqPipe && (stages < seq_chunks || micro_batches * seq_chunks < stages))
              continue;  // MindSpore's rule for seqvpp
            if (schedule == PipelineSchedule::kSeqVpp && stages % seq_chunks != 0) continue;
            INFO(ToString(schedule) << ": " << stages << " stages, " << micro_batches << " micro-batches, " << chunks
                                    << " chunks, " << seq_chunks << " sequence chunks");
            CHECK(RunsThrough(schedule, stages, micro_batches, chunks, false, seq_chunks));
            for (int64_t s = 0; s < stages; ++s) {
              const auto order = StageSchedule(schedule, s, stages, micro_batches, chunks, false, seq_chunks);
              CHECK(static_cast<int64_t>(order.size()) == 2 * micro_batches * chunks * seq_chunks);
              // A chunk's attention reads the keys of the sequence's chunks before it (forwards in order)
              // and its backward gives theirs their gradients (backwards in reverse).
              std::map<std::tuple<bool, int64_t, int64_t>, int64_t> last;  // (forward, micro-batch, chunk)
              for (const auto& i : order) {
                const auto key = std::make_tuple(i.forward, i.micro_batch / seq_chunks, i.chunk);
                const int64_t j = i.micro_batch % seq_chunks;
                if (last.count(key)) CHECK(j == last[key] + (i.forward ? 1 : -1));
                last[key] = j;
              }
            }
          }
}

TEST_CASE("seqvpp can deadlock where seq_split_num leaves a remainder of the stages") {
  // Cycles of floor(S / n) micro-batches, two passes of warm-up apart per stage.
  CHECK_FALSE(RunsThrough(PipelineSchedule::kSeqVpp, 5, 3, 2, false, 3));
  CHECK_FALSE(RunsThrough(PipelineSchedule::kSeqVpp, 6, 4, 2, false, 4));
  CHECK(RunsThrough(PipelineSchedule::kSeqVpp, 5, 3, 2, false, 2));
  CHECK(RunsThrough(PipelineSchedule::kSeqSmartVpp, 5, 3, 2, false, 3));
}

TEST_CASE("the run summary names the schedule and what overlaps") {
  SimulationOptions s;
  CHECK(DescribeSchedule(s, {}, 1, 1).empty());
  CHECK(DescribeSchedule(s, {}, 4, 1) == "1f1b");
  s.pipeline_schedule = PipelineSchedule::kInterleaved;
  s.virtual_pipeline_chunks = 4;
  const PassOverlap expert{{CommDimension::kExpert}, {}};
  CHECK(DescribeSchedule(s, expert, 8, 1) ==
        "interleaved over 4 chunks per stage; forwards and backwards overlapped in pairs (expert collectives beside "
        "the other pass)");
  CHECK(DescribeSchedule(s, expert, 1, 1) ==
        "forwards and backwards overlapped in pairs (expert collectives beside the other pass)");
  // MindSpore's pp_1f1b_overlap names operator types, of every dimension.
  const PassOverlap alltoall{{CommDimension::kTensor, CommDimension::kData, CommDimension::kPipeline,
                              CommDimension::kExpert, CommDimension::kContext},
                             {Collective::kAllToAll}};
  CHECK(DescribeSchedule(s, alltoall, 1, 1) ==
        "forwards and backwards overlapped in pairs (AlltoAll collectives beside the other pass)");
  s.mode = StepMode::kInfer;
  CHECK(DescribeSchedule(s, expert, 8, 1).empty());
}

}  // namespace
}  // namespace shardlab
