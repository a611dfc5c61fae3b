// A run file's "simulation" section: which engine simulates the step, what
// step (training or inference), the pipeline schedule, how finely SimGrid
// expands collectives, the optimizer whose state the memory counts, and
// forced collective algorithms. Every choice is an enum; its spelling in the
// file is ToString's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/collective.h"

namespace shardlab {

class JsonNode;

enum class Engine {
  kSimGrid,     // SimGrid flows on the cluster's links ("simgrid")
  kAnalytical,  // closed-form task times on the same timeline ("analytical")
  kBoth,        // both, compared ("both"); one-engine callers take SimGrid
};

enum class StepMode {
  kTrain,  // forward, backward, gradient reduction and optimizer ("train")
  kInfer,  // forward only ("infer")
};

enum class PipelineSchedule {
  k1F1B,         // one forward one backward after the warm-up ("1f1b")
  kGPipe,        // all forwards, then all backwards ("gpipe")
  kInterleaved,  // 1F1B over virtual_pipeline_chunks model chunks per stage ("interleaved")
  // 1F1B with every backward split in two (Qi et al., "Zero Bubble Pipeline
  // Parallelism", ICLR 2024, schedule ZB-H1): the input-gradient half (B),
  // which the stage before waits for, runs in 1F1B's place; the
  // weight-gradient half (W) of micro-batch i runs after B of micro-batch
  // i + s on stage s, the last s of them after the last B, where they fill
  // the cool-down's bubbles. What a B leaves for its W stays in memory until
  // the W runs ("zero_bubble_h1").
  kZeroBubbleH1,
  // MindSpore's zero_bubble_v (its ZeroBubbleV order over DeepSeek's
  // DualPipeV phases, forward and backward pairs run one after the other
  // unless overlap_forward_backward): two chunks per stage placed in
  // a V (chunk 0 of stage s is virtual stage s, chunk 1 virtual stage
  // 2S - 1 - s), backwards split into input- and weight-gradient passes
  // where the order makes room for the latter; at least 2S micro-batches
  // ("zero_bubble_v").
  kZeroBubbleV,
  // DeepSeek's DualPipe (DeepSeek-V3 technical report, section 3.2.1;
  // deepseek-ai/DualPipe, DualPipe.step): two copies of the model run in
  // opposite directions, stage s of the one and stage S - 1 - s of the
  // other on stage s (chunks 0 and 1), each fed half the micro-batches from
  // its own end; forward and backward pairs overlap in the steady state
  // with overlap_forward_backward; backwards split into input- and
  // weight-gradient passes where the order makes room for the latter; each
  // stage's gradients summed with its mirror stage's (S - 1 - s) before the
  // update. An even number of stages (2 or more), an even number of
  // micro-batches, at least 2S ("dualpipe").
  kDualPipe,
  // MindSpore's sequence-pipelined 1F1B (SeqpipeScheduler, "seqpipe"): each
  // micro-batch runs as model_params.seq_split_num passes over its
  // sequence's chunks, in order (a chunk's attention reads the keys and
  // values of those before it), backwards in reverse; over
  // virtual_pipeline_chunks chunks (1 or more) as interleaving visits them,
  // stage s warming up (S - s - 1) * bias + (v - 1) * G * n + n - 1 passes
  // ahead (bias 1 without chunks, 2 with; G the first cycle's micro-batches,
  // n the sequence chunks).
  kSeqPipe,
  // seqpipe whose cycles hold pipeline_stages / seq_split_num micro-batches,
  // so that a cycle fills the pipeline with sequence chunks (SeqvppScheduler,
  // "seqvpp"; 2 or more chunks).
  kSeqVpp,
  // seqvpp warming up by one pass per stage instead of two (SeqsmartvppScheduler, "seqsmartvpp").
  kSeqSmartVpp,
};

// Whether `s` runs exactly two chunks per stage (zero_bubble_v, dualpipe).
bool RunsTwoChunks(PipelineSchedule s);
// Whether `s` runs the weight-gradient half of each backward as a pass of its own.
bool SplitsBackward(PipelineSchedule s);
// Whether `s` runs each stage's work as virtual_pipeline_chunks chunks.
bool RunsChunks(PipelineSchedule s);
// Whether `s` runs each micro-batch as sequence chunks (seq_split_num).
bool RunsSequenceChunks(PipelineSchedule s);

enum class Fidelity {
  kAggregated,  // a collective's ring steps as one flow per link ("aggregated")
  kStep,        // every ring step its own flows ("step")
};

// Whether SimGrid simulates one device per orbit of symmetric devices.
enum class Symmetry {
  kFold,  // one device per orbit, on the platform folded to match ("fold")
  kOff,   // every device ("off"): slower, for checking the folded step
};

enum class Optimizer {
  kAdam,      // two float32 moments (+ a float32 master copy for 16-bit weights) ("adam")
  kLamb,      // as Adam ("lamb")
  kMomentum,  // one float32 moment ("momentum")
  kSgd,       // no state ("sgd")
  // Adam whose states (and fp32 master weights) live in host memory and whose
  // update runs on the host CPUs (MindSpore's nn.AdamOffload): each step the
  // owned gradients cross PCIe to the host and the updated weights come back
  // ("adam_offload").
  kAdamOffload,
};

const char* ToString(Engine e);
const char* ToString(StepMode m);
const char* ToString(PipelineSchedule s);
const char* ToString(Fidelity f);
const char* ToString(Optimizer o);
const char* ToString(Symmetry s);
// The spellings, for command-line checks; the parsers throw
// std::invalid_argument naming the accepted values.
std::vector<std::string> EngineNames();
Engine ParseEngine(const std::string& name);
PipelineSchedule ParsePipelineSchedule(const std::string& name);
Fidelity ParseFidelity(const std::string& name);
Symmetry ParseSymmetry(const std::string& name);
std::vector<std::string> SymmetryNames();
// The accepted values of a closed-vocabulary key of the "simulation" section
// ("pipeline_schedule", ...); empty for any other key.
std::vector<std::string> SimulationKeyVocabulary(const std::string& key);

struct SimulationOptions {
  Engine engine = Engine::kSimGrid;
  StepMode mode = StepMode::kTrain;
  PipelineSchedule pipeline_schedule = PipelineSchedule::k1F1B;
  int64_t virtual_pipeline_chunks = 1;  // model chunks per stage (interleaved only)
  // In the schedule's steady state a forward and the backward of another
  // micro-batch run together, each one's blocking collectives of these
  // dimensions beside the other's compute (Megatron's
  // --overlap-moe-expert-parallel-comm, its combined 1F1B, overlaps the
  // expert AlltoAlls; DualPipe's overlapped chunks with zero_bubble_v,
  // every one); 1F1B-based orders warm up further ahead for it. Empty: off.
  std::vector<CommDimension> overlap_forward_backward;
  // zero_bubble_v: MindSpore's ZBV_offset environment variable. Each chunk
  // splits this many fewer of its last backwards into an input-gradient and
  // a weight-gradient pass, and stages past the first run this many of their
  // chunk-0 cool-down backwards without a queued weight-gradient pass before
  // them (zero_bubble_v.cc, ProcessStep7; detach_backward.cc).
  int64_t zbv_offset = 0;
  Fidelity fidelity = Fidelity::kAggregated;
  Symmetry symmetry = Symmetry::kFold;
  Optimizer optimizer = Optimizer::kAdam;
  // Forced algorithms; a collective not listed ("auto" in the file) is chosen per group.
  std::map<Collective, CollectiveAlgorithm> collective_algorithms;

  bool training() const { return mode == StepMode::kTrain; }
  bool operator==(const SimulationOptions&) const = default;
};

// `defaults`: the values of the keys the section leaves out.
SimulationOptions ReadSimulation(const JsonNode& node, const SimulationOptions& defaults = {});
nlohmann::json ToJson(const SimulationOptions& s);

}  // namespace shardlab
