// The order in which a pipeline stage runs its forward and backward passes:
// GPipe (all forwards, then all backwards), 1F1B (MindSpore's default: S-s
// warm-up forwards on stage s, then one backward and one forward alternately,
// then the remaining backwards), interleaved 1F1B over virtual chunks, and
// ZB-H1 (1F1B whose backwards are split into an input-gradient pass and a
// weight-gradient pass, the latter lagging s backwards behind on stage s)
// zero_bubble_v (two chunks in a V, MindSpore's ZeroBubbleV order) and
// dualpipe (two model copies in opposite directions, DeepSeek's order). With
// overlap_forward_backward, a forward and a backward of another micro-batch
// run together as one unit (Megatron's combined 1F1B, DualPipe's overlapped
// chunks): 1F1B-based orders warm up further ahead for it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/simulation_options.h"

namespace shardlab {

struct ScheduleItem {
  bool forward = true;
  int64_t micro_batch = 0;  // under sequence pipelining: micro-batch x seq_chunks + sequence chunk
  int64_t chunk = 0;  // virtual stage chunk (interleaved, zero_bubble_v, dualpipe); its virtual stage: VirtualStage
  // A backward item that runs a micro-batch's weight-gradient pass
  // (StageProgram::weight_gradient) of a schedule that splits the backward;
  // its other backward item is then the input-gradient pass alone.
  bool weight_gradient = false;
  // Runs together with the next item as one unit (overlap_forward_backward):
  // a unit holds one forward and the backward of another micro-batch (with
  // its weight-gradient pass when the order runs it at once), each pass's
  // collectives beside the other's compute (OverlapSteps).
  bool with_next = false;

  // The item that sends to the neighbouring stage and waits for it: a
  // forward, or a backward's input-gradient pass.
  bool Exchanges() const { return !weight_gradient; }
};

// The virtual stage chunk `chunk` of `stage` runs as: chunk * stages + stage,
// or, for zero_bubble_v's V and dualpipe's second direction, 2 * stages - 1 -
// stage for chunk 1.
int64_t VirtualStage(PipelineSchedule schedule, int64_t chunk, int64_t stage, int64_t stages);
// The stage that runs `virtual_stage` (the inverse of VirtualStage, chunk dropped).
int64_t StageOfVirtual(PipelineSchedule schedule, int64_t virtual_stage, int64_t stages);
// The virtual stage after `virtual_stage` (`next`), which its forward
// output feeds, or the one before, which its input gradient goes back to;
// none past either end of the pipeline, nor between dualpipe's two
// directions (virtual stages stages - 1 and stages), each a pipeline of its
// own. A forward waits for the one before, a backward for the one after.
std::optional<int64_t> AdjacentVirtualStage(PipelineSchedule schedule, bool next, int64_t virtual_stage, int64_t stages,
                                            int64_t chunks);

// The item's name on timelines: "F3", "B3", "W3" (".1" for chunk 1 of
// `chunks` > 1; "F3s1" for micro-batch 3's sequence chunk 1 of `seq_chunks` > 1).
std::string PassName(const ScheduleItem& item, int64_t chunks, int64_t seq_chunks = 1);

// `overlap`: pair forwards with backwards into units (ScheduleItem::with_next)
// where the schedule's steady state alternates them; the order stays free of
// deadlock with each unit waiting for all its inputs. `seq_chunks`: the
// sequence chunks of each of the `micro_batches` (seqpipe, seqvpp, seqsmartvpp).
// `zbv_offset`: zero_bubble_v's SimulationOptions::zbv_offset.
std::vector<ScheduleItem> StageSchedule(PipelineSchedule schedule, int64_t stage, int64_t stages, int64_t micro_batches,
                                        int64_t chunks, bool overlap = false, int64_t seq_chunks = 1,
                                        int64_t zbv_offset = 0);

// Whether every stage gets through its StageSchedule order when each pass
// waits for its inputs (a forward for the virtual stage before, a backward
// for its own forward and the virtual stage after; a weight-gradient pass
// comes after its backward on the same stage) and a unit for all its
// passes' inputs: false when the stages' orders wait on one another.
bool RunsThrough(PipelineSchedule schedule, int64_t stages, int64_t micro_batches, int64_t chunks, bool overlap,
                 int64_t seq_chunks = 1);

// The end of the unit that starts at `begin`: the index after its last item.
size_t UnitEnd(const std::vector<ScheduleItem>& order, size_t begin);

}  // namespace shardlab
