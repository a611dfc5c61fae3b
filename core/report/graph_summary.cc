#include "core/report/graph_summary.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config/units.h"
#include "core/ops/flops.h"

namespace shardlab {

std::string FormatCount(double count) {
  if (count >= 1e12) return fmt::format("{:.2f} T", count / 1e12);
  if (count >= 1e9) return fmt::format("{:.2f} B", count / 1e9);
  if (count >= 1e6) return fmt::format("{:.2f} M", count / 1e6);
  if (count >= 1e3) return fmt::format("{:.1f} K", count / 1e3);
  return fmt::format("{:.0f}", count);
}

std::string FormatFlops(double flops) {
  const char* units[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
  int i = 0;
  while (flops >= 1000 && i < 6) {
    flops /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}", flops, units[i]);
}

GraphSummary SummarizeGraph(const Graph& graph, int64_t batch, int64_t seq_chunks) {
  GraphSummary s;
  s.name = graph.name();
  s.batch = batch;
  s.seq_chunks = seq_chunks;
  s.operators = static_cast<int64_t>(graph.operators().size());
  s.tensors = static_cast<int64_t>(graph.tensors().size());
  s.stages.resize(graph.stage_count());
  for (const auto& op : graph.operators()) {
    ++s.operators_by_type[op.type];
    const OpWork work = ComputeOpWork(graph, op);
    s.forward_flops += work.forward_flops;
    s.backward_flops += work.backward_flops;
    if (op.recompute) s.recompute_flops += work.forward_flops;
    if (op.OnHost()) ++s.host_operators;
    if (op.strategy) ++s.strategies;
    auto& stage = s.stages[op.pipeline_stage];
    ++stage.operators;
    stage.forward_flops += work.forward_flops;
    stage.backward_flops += work.backward_flops;
  }
  const auto passes = static_cast<double>(seq_chunks);
  for (double* flops : {&s.forward_flops, &s.backward_flops, &s.recompute_flops}) *flops *= passes;
  for (StageSummary& stage : s.stages) {
    stage.forward_flops *= passes;
    stage.backward_flops *= passes;
  }
  for (int index : graph.Parameters()) {
    const Tensor& t = graph.tensor(index);
    ++s.parameter_tensors;
    s.parameter_bytes += static_cast<double>(t.bytes());
    if (!t.requires_grad) {
      s.non_trainable_parameters += t.elements();
      continue;
    }
    s.parameters += t.elements();
    // A parameter belongs to the stage of its first user.
    const auto& users = graph.Consumers(index);
    if (users.empty()) continue;
    auto& stage = s.stages[graph.op(users.front()).pipeline_stage];
    stage.parameters += t.elements();
    stage.parameter_bytes += static_cast<double>(t.bytes());
  }
  return s;
}

std::string FormatGraphSummary(const GraphSummary& s) {
  std::string out =
      fmt::format("model {}: {} operators, {} tensors, batch {}\n", s.name, s.operators, s.tensors, s.batch);
  out += fmt::format("  parameters   {} trainable ({} exactly) in {} tensors, {} non-trainable, {} in all\n",
                     FormatCount(static_cast<double>(s.parameters)), s.parameters, s.parameter_tensors,
                     FormatCount(static_cast<double>(s.non_trainable_parameters)),
                     FormatQuantity(s.parameter_bytes, Quantity::kBytes));
  out += fmt::format("  FLOPs/sample {} forward, {} forward+backward", FormatFlops(s.forward_flops_per_sample()),
                     FormatFlops(s.training_flops_per_sample()));
  if (s.seq_chunks > 1)
    out += fmt::format(" (the graph is one of each sequence's {} chunk passes, {} forward)", s.seq_chunks,
                       FormatFlops(s.forward_flops_per_sample() / static_cast<double>(s.seq_chunks)));
  out += "\n";
  if (s.strategies) out += fmt::format("  strategies   {} operators carry a shard strategy\n", s.strategies);
  if (s.host_operators) out += fmt::format("  host         {} operators run on the host CPU\n", s.host_operators);
  out += "  operators by type:\n";
  for (const auto& [type, count] : s.operators_by_type) out += fmt::format("    {:<32}{:>8}\n", type, count);
  if (s.stages.size() > 1) {
    out += "  pipeline stages:\n";
    for (size_t i = 0; i < s.stages.size(); ++i)
      out +=
          fmt::format("    stage {:<3} {:>6} ops  {:>10} params  {:>12} fwd/batch\n", i, s.stages[i].operators,
                      FormatCount(static_cast<double>(s.stages[i].parameters)), FormatFlops(s.stages[i].forward_flops));
  }
  return out;
}

nlohmann::json ToJson(const GraphSummary& s) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& st : s.stages)
    stages.push_back({{"operators", st.operators},
                      {"parameters", st.parameters},
                      {"parameter_bytes", st.parameter_bytes},
                      {"forward_flops", st.forward_flops},
                      {"backward_flops", st.backward_flops}});
  return {{"name", s.name},
          {"batch", s.batch},
          {"seq_chunks", s.seq_chunks},
          {"operators", s.operators},
          {"operators_by_type", s.operators_by_type},
          {"tensors", s.tensors},
          {"parameter_tensors", s.parameter_tensors},
          {"parameters", s.parameters},
          {"non_trainable_parameters", s.non_trainable_parameters},
          {"parameter_bytes", s.parameter_bytes},
          {"forward_flops_per_sample", s.forward_flops_per_sample()},
          {"training_flops_per_sample", s.training_flops_per_sample()},
          {"strategies", s.strategies},
          {"host_operators", s.host_operators},
          {"stages", stages}};
}

}  // namespace shardlab
