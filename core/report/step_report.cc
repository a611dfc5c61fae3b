#include "core/report/step_report.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/config/units.h"
#include "core/report/graph_summary.h"

namespace shardlab {
namespace {

std::string Seconds(double s) { return FormatQuantity(s, Quantity::kSeconds); }
std::string Bytes(double b) { return FormatQuantity(b, Quantity::kBytes); }
double Percent(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }
// Communication that overlapped compute; rounding noise below a nanosecond is none.
double Hidden(double total, double exposed) { return total - exposed > 1e-9 ? total - exposed : 0.0; }

}  // namespace

std::string FormatStrategyChoice(const StrategyChoice& c) {
  std::string out = "  strategies ";
  if (c.Searched()) {
    out += fmt::format("searched by {} ({} cost model) in {}", c.mode, c.cost_model, Seconds(c.search_seconds));
  } else if (c.mode == "semi_auto") {
    out += "configured shard strategies, data parallel elsewhere";
  } else if (c.mode == "given") {
    out += "as the document gives them";
  } else {
    out += fmt::format("{}: every operator data parallel", c.mode);
  }
  if (c.configured > 0) out += fmt::format(", {} operators configured", c.configured);
  if (!c.loaded_checkpoint.empty()) out += ", loaded from " + c.loaded_checkpoint;
  if (!c.saved_checkpoint.empty()) out += ", saved to " + c.saved_checkpoint;
  return out + "\n";
}

std::string FormatStepReport(const RunSpec& run, const Plan& plan, const StepResult& r) {
  std::string out;
  out += fmt::format("  engine     {} ({:.0f} ms of simulation)\n", r.engine, 1e3 * r.wall_seconds);
  if (!r.engine_detail.empty()) out += fmt::format("  devices    {}\n", r.engine_detail);
  out += fmt::format("  step time  {}  ({} samples: {:.1f} samples/s", Seconds(r.step_seconds), plan.samples_per_step,
                     r.samples_per_second);
  if (plan.tokens_per_step > 0) out += fmt::format(", {} tokens/s", FormatCount(r.tokens_per_second));
  out += ")\n";
  out += fmt::format("  compute    {:.1f} TFLOP/s per device of useful work, MFU {:.1f}%\n", r.tflops_per_device,
                     100 * r.mfu);
  out += fmt::format(
      "  breakdown  stage {}: compute {} ({:.1f}%), exposed communication {} ({:.1f}%), "
      "pipeline bubbles {} ({:.1f}%)\n",
      r.slowest_stage, Seconds(r.compute_seconds), Percent(r.compute_seconds, r.step_seconds),
      Seconds(r.exposed_communication_seconds), Percent(r.exposed_communication_seconds, r.step_seconds),
      Seconds(r.bubble_seconds), 100 * r.bubble_fraction);
  out += fmt::format("  comm       {} of communication per device on stage {} ({} hidden behind compute)\n",
                     Seconds(r.communication_seconds), r.slowest_stage,
                     Seconds(Hidden(r.communication_seconds, r.exposed_communication_seconds)));
  const StageResult& slowest = r.stages[r.slowest_stage];
  // The dimensions that carry anything (all idle: none).
  std::vector<std::string> dimensions;
  for (const DimensionCommunication& c : slowest.communication) {
    if (c.seconds == 0 && c.bytes == 0) continue;
    std::string text = fmt::format("{} {} ({}", ToString(c.dimension), Seconds(c.seconds), Bytes(c.bytes));
    text += c.dimension == CommDimension::kPipeline ? ")" : fmt::format(", {} exposed)", Seconds(c.exposed_seconds));
    dimensions.push_back(std::move(text));
  }
  if (!dimensions.empty()) out += fmt::format("  by dim     {}\n", fmt::join(dimensions, "; "));
  const StageResult* peak = &r.stages.front();
  for (const auto& s : r.stages)
    if (s.memory.peak > peak->memory.peak) peak = &s;
  const std::string gathered =
      peak->memory.gathered_weights > 0 ? fmt::format(" ({} gathered)", Bytes(peak->memory.gathered_weights)) : "";
  const std::string held =
      peak->memory.held_for_weight_gradients > 0
          ? fmt::format(", {} held for weight gradients", Bytes(peak->memory.held_for_weight_gradients))
          : "";
  out += fmt::format(
      "  memory     peak {} of {} on stage {}: parameters {}{}, gradients {}, optimizer {}, "
      "activations {} ({:.4g} micro-batch{} in flight{})\n",
      Bytes(peak->memory.peak), Bytes(plan.device_memory), peak->stage, Bytes(peak->memory.parameters), gathered,
      Bytes(peak->memory.gradients), Bytes(peak->memory.optimizer_states), Bytes(peak->memory.activations),
      peak->memory.micro_batches_in_flight, peak->memory.micro_batches_in_flight == 1 ? "" : "es", held);
  out += fmt::format("  slowest    stage {}: {}\n", r.slowest_stage, r.slowest_reason);
  if (r.out_of_memory) out += fmt::format("  OUT OF MEMORY: {}\n", r.memory_message);
  if (r.stages.size() > 1) {
    out += "  stage   fwd/micro-batch  bwd/micro-batch   bubble     exposed comm   memory\n";
    for (const auto& s : r.stages)
      out +=
          fmt::format("  {:>5}   {:>15}  {:>15}   {:>9}  {:>13}   {:>10}{}\n", s.stage, Seconds(s.forward_seconds),
                      Seconds(s.backward_seconds), Seconds(s.bubble_seconds), Seconds(s.exposed_communication_seconds),
                      Bytes(s.memory.peak), s.out_of_memory ? "  OOM" : "");
  }
  return out;
}

}  // namespace shardlab
