#include "core/report/run_summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/config/units.h"
#include "core/cost/compute_cost.h"
#include "core/graph/builders/model_builder.h"

namespace shardlab {
namespace {

std::string DescribeFusion(const CommFusion& fusion) {
  if (!fusion.openstate) return "off";
  const auto& ar = fusion.allreduce;
  switch (ar.mode) {
    case FusionSetting::Mode::kDefault:
      return "default (all gradients in one AllReduce)";
    case FusionSetting::Mode::kAuto:
      return "auto (64 MB buckets)";
    case FusionSetting::Mode::kSize:
      return fmt::format("size ({} MB buckets)", ar.size_mb);
    case FusionSetting::Mode::kIndex:
      return fmt::format("index (split after {})", fmt::join(ar.indices, ", "));
  }
  return "";
}

}  // namespace

std::string DescribeParallel(const ParallelConfig& p) {
  std::string out = fmt::format("{}", ToString(p.parallel_mode));
  if (p.parallel_mode == ParallelMode::kAutoParallel) out += fmt::format(" ({})", ToString(p.search_mode));
  out += fmt::format(", device_num {}, pipeline_stages {}, micro_batch_num {}, global_batch_size {}", p.device_num,
                     p.pipeline_stages, p.micro_batch_num, p.global_batch_size);
  out += fmt::format(", fusion {}", DescribeFusion(p.comm_fusion));
  if (p.enable_parallel_optimizer) out += ", parallel optimizer";
  if (p.recompute) out += ", recompute";
  if (p.full_batch) out += ", full_batch";
  return out;
}

std::string DescribeSchedule(const SimulationOptions& s, const PassOverlap& overlap, int64_t pipeline_stages,
                             int64_t seq_chunks) {
  if (!s.training()) return "";
  std::string out;
  if (pipeline_stages > 1) {
    out = ToString(s.pipeline_schedule);
    if (s.pipeline_schedule == PipelineSchedule::kInterleaved ||
        (RunsSequenceChunks(s.pipeline_schedule) && s.virtual_pipeline_chunks > 1))
      out += fmt::format(" over {} chunks per stage", s.virtual_pipeline_chunks);
    if (s.pipeline_schedule == PipelineSchedule::kZeroBubbleV)
      out += " (two chunks per stage in a V, MindSpore's ZeroBubbleV order)";
    if (s.pipeline_schedule == PipelineSchedule::kDualPipe)
      out += " (two model copies in opposite directions, DeepSeek's DualPipe order)";
    if (s.pipeline_schedule == PipelineSchedule::kZeroBubbleH1)
      out += " (backwards split into input- and weight-gradient passes)";
  }
  if (seq_chunks > 1)
    out +=
        fmt::format("{}each micro-batch's sequences in {} chunks, one pass each", out.empty() ? "" : "; ", seq_chunks);
  if (!overlap.empty())
    out += fmt::format("{}forwards and backwards overlapped in pairs ({} collectives beside the other pass)",
                       out.empty() ? "" : "; ", overlap.Describe());
  return out;
}

RunSummary SummarizeRun(const RunSpec& run, const Graph& graph) {
  RunSummary s;
  s.name = run.name;
  s.devices = run.parallel.device_num;
  s.servers_used = (s.devices + run.cluster.devices_per_server - 1) / run.cluster.devices_per_server;
  s.devices_per_stage = run.parallel.devices_per_stage();
  // Under sequence pipelining the graph is one of a sequence's passes: a micro-batch's work is all of them.
  s.model = SummarizeGraph(graph, run.parallel.micro_batch_size(), SequenceChunks(run.model));
  const bool training = run.simulation.training();
  double per_micro = s.model.forward_flops;
  if (training) {
    per_micro += s.model.backward_flops;
    per_micro += s.model.recompute_flops;  // what is recomputed runs again before its backward
  }
  s.step_flops = per_micro * static_cast<double>(run.parallel.micro_batch_num);
  s.peak_flops_per_device = PeakFlops(run.cluster.device, ComputeDType(run.model));
  s.ideal_step_seconds = s.step_flops / (s.peak_flops_per_device * static_cast<double>(s.devices));
  return s;
}

std::string FormatRunSummary(const RunSpec& run, const RunSummary& s) {
  const auto& c = run.cluster;
  const auto& n = c.inter_server;
  std::string fabric =
      c.intra_server.kind == IntraServerFabric::Kind::kHccsMesh
          ? fmt::format("HCCS full-mesh groups of {}", c.intra_server.group_size)
          : fmt::format("NVSwitch {}/device", FormatQuantity(c.intra_server.link_bandwidth, Quantity::kBytesPerSecond));
  std::string out = fmt::format("run {}\n", run.name);
  out += fmt::format("  cluster    {}: {} servers x {} {} ({} devices), {} peak, {} memory each\n", c.name, c.servers,
                     c.devices_per_server, c.device.model, c.device_count(),
                     FormatQuantity(s.peak_flops_per_device, Quantity::kFlopsPerSecond),
                     FormatQuantity(c.device.memory_bytes, Quantity::kBytes));
  out += fmt::format("  network    {}; {} NICs of {} per server, {}-level fat tree, oversubscription {}\n", fabric,
                     n.nics_per_server, FormatQuantity(n.nic_bandwidth, Quantity::kBytesPerSecond), n.levels,
                     n.oversubscription);
  out += fmt::format("  devices    {} of {} on {} servers; {} pipeline stage{} of {} devices\n", s.devices,
                     c.device_count(), s.servers_used, run.parallel.pipeline_stages,
                     run.parallel.pipeline_stages > 1 ? "s" : "", s.devices_per_stage);
  out += fmt::format("  model      {}{}: {} parameters ({}), {} operators\n", run.model.name,
                     run.model.builder.empty() ? "" : " (" + run.model.builder + ")",
                     FormatCount(static_cast<double>(s.model.parameters)),
                     FormatQuantity(s.model.parameter_bytes, Quantity::kBytes), s.model.operators);
  if (const ModelBuilder* builder = FindModelBuilder(run.model.builder)) {
    // The parameters the model sets; the others keep their defaults (0 often means "derived").
    std::string params;
    size_t defaults = 0;
    for (const ParamSpec& spec : builder->params) {
      const auto it = run.model.params.values().find(spec.name);
      if (it == run.model.params.values().end() || it->second == spec.fallback) {
        ++defaults;
        continue;
      }
      params += fmt::format("{}{}={}", params.empty() ? "" : " ", spec.name,
                            std::visit([](const auto& v) { return fmt::format("{}", v); }, it->second));
    }
    if (defaults > 0)
      params += fmt::format("{}(and {} at their defaults: shardlab models)", params.empty() ? "" : " ", defaults);
    out += fmt::format("             {}\n", params);
  }
  out += fmt::format("  parallel   {}\n", DescribeParallel(run.parallel));
  if (const std::string schedule = DescribeSchedule(run.simulation, ForwardBackwardOverlap(run),
                                                    run.parallel.pipeline_stages, SequenceChunks(run.model));
      !schedule.empty())
    out += fmt::format("  schedule   {}\n", schedule);
  out += fmt::format("  step       {} mode, {} per step ({} per micro-batch of {} samples)\n",
                     ToString(run.simulation.mode), FormatFlops(s.step_flops),
                     FormatFlops(s.step_flops / run.parallel.micro_batch_num), run.parallel.micro_batch_size());
  out += fmt::format("  bound      {} at peak compute on every device (no communication, no bubbles)\n",
                     FormatQuantity(s.ideal_step_seconds, Quantity::kSeconds));
  return out;
}

nlohmann::json ToJson(const RunSummary& s) {
  return {{"name", s.name},
          {"devices", s.devices},
          {"servers_used", s.servers_used},
          {"devices_per_stage", s.devices_per_stage},
          {"model", ToJson(s.model)},
          {"step_flops", s.step_flops},
          {"peak_flops_per_device", s.peak_flops_per_device},
          {"ideal_step_seconds", s.ideal_step_seconds}};
}

}  // namespace shardlab
