// `shardlab collective`: one collective simulated on a cluster's SimGrid
// platform, swept over sizes, printed in nccl-tests' layout (size, count,
// type, redop, root, then time, algbw, busbw and #wrong out of place and in
// place, and the average bus bandwidth) with the algorithm, protocol and
// closed form after it.
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/config/units.h"
#include "core/util/json_reader.h"
#include "sim/collective_flows.h"
#include "sim/simgrid_backend.h"

namespace shardlab::cli {
namespace {

// One of nccl-tests' halves: time, algbw, busbw, #wrong.
std::string NcclTestsColumns(const std::string& time, const std::string& algbw, const std::string& busbw,
                             const std::string& wrong) {
  return fmt::format("  {:>9}  {:>7}  {:>7}  {:>6}", time, algbw, busbw, wrong);
}

// nccl-tests' count column for float (4-byte) elements: the whole buffer for
// AllReduce and Broadcast, one rank's part for AllGather, ReduceScatter and
// AlltoAll.
int64_t ElementCount(Collective op, double size, int64_t ranks) {
  const auto elements = static_cast<int64_t>(size / 4);
  return op == Collective::kAllReduce || op == Collective::kBroadcast ? elements : elements / ranks;
}

const char* ReductionName(Collective op) {
  return op == Collective::kAllReduce || op == Collective::kReduceScatter ? "sum" : "none";
}

}  // namespace

int CollectiveCommand(const CollectiveArgs& args) {
  const nlohmann::json document = ReadJsonFile(args.cluster_file);
  const ClusterSpec cluster = ReadClusterSpec(JsonNode(document, args.cluster_file));
  const Collective op = ParseCollective(args.op);
  const int64_t last = args.first_rank + (args.ranks - 1) * args.stride;
  if (last >= cluster.device_count())
    throw std::runtime_error(
        fmt::format("--ranks {} with --stride {} from rank {} needs rank {}, but cluster \"{}\" has {} devices",
                    args.ranks, args.stride, args.first_rank, last, cluster.name, cluster.device_count()));
  const std::vector<double> sizes = ParseSizeRange(args.bytes, "--bytes");
  std::vector<int64_t> members;
  for (int64_t i = 0; i < args.ranks; ++i) members.push_back(args.first_rank + i * args.stride);
  const GroupPlacement placement = PlaceGroup(members, cluster);
  const Fidelity fidelity = ParseFidelity(args.fidelity);

  // Per-rank bytes in CollectiveSeconds' convention; nccl-tests' size is the whole buffer.
  auto per_rank = [&](double size) {
    return op == Collective::kAllGather ? size / static_cast<double>(args.ranks) : size;
  };
  std::map<Collective, CollectiveAlgorithm> force;
  if (args.algorithm != "auto") force[op] = ParseAlgorithm(args.algorithm);
  std::vector<CollectiveAlgorithm> algorithms(sizes.size());
  std::vector<CollectiveTiming> timings(sizes.size());
  std::vector<std::vector<sim::Phase>> collectives(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    algorithms[i] = ChooseAlgorithm(op, per_rank(sizes[i]), placement, cluster, force);
    timings[i] = TimeCollective(op, algorithms[i], per_rank(sizes[i]), placement, cluster);
    collectives[i] = sim::ExpandCollective(op, algorithms[i], per_rank(sizes[i]), members, cluster.devices_per_server,
                                           fidelity, timings[i].library);
  }
  const std::vector<double> simulated = [&] {
    PhaseProgress progress(
        fmt::format("simulating {} {} on SimGrid", sizes.size(), sizes.size() == 1 ? "size" : "sizes"));
    return sim::LoadSimGridBackend().time_collectives(cluster, last + 1, std::move(collectives));
  }();

  std::cout << fmt::format(
      "# {} over {} ranks of {} (first rank {}, stride {}: {} server{}, {} per server), {} flows\n", ToString(op),
      args.ranks, cluster.name, args.first_rank, args.stride, placement.servers, placement.servers == 1 ? "" : "s",
      placement.per_server, args.fidelity);
  std::cout << "# Simulated: in place runs the same flows as out of place; no data moves, so #wrong is N/A.\n#\n";
  // Each half's title centred over its four columns, after size .. root.
  std::string titles = fmt::format("#{:51}{:^37}{:^37}", "", "out-of-place", "in-place");
  titles.erase(titles.find_last_not_of(' ') + 1);
  std::cout << titles << "\n";
  std::cout << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {:>18} {:>8} {:>12} {:>8}\n", "size", "count",
                           "type", "redop", "root", NcclTestsColumns("time", "algbw", "busbw", "#wrong"),
                           NcclTestsColumns("time", "algbw", "busbw", "#wrong"), "algorithm", "protocol", "closed",
                           "diff");
  std::cout << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {:>18} {:>8} {:>12} {:>8}\n", "(B)",
                           "(elements)", "", "", "", NcclTestsColumns("(us)", "(GB/s)", "(GB/s)", ""),
                           NcclTestsColumns("(us)", "(GB/s)", "(GB/s)", ""), "", "", "(us)", "");
  double busbw_sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double t = simulated[i];
    const double closed = timings[i].seconds;
    const double algbw = t > 0 ? sizes[i] / t / 1e9 : 0;
    const double busbw = algbw * BusBandwidthFactor(op, args.ranks);
    busbw_sum += busbw;
    const std::string measured = NcclTestsColumns(fmt::format("{:.2f}", t * 1e6), fmt::format("{:.2f}", algbw),
                                                  fmt::format("{:.2f}", busbw), "N/A");
    std::cout << fmt::format("  {:>10.0f}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {:>18} {:>8} {:>12.2f} {:>7.2f}%\n",
                             sizes[i], ElementCount(op, sizes[i], args.ranks), "float", ReductionName(op),
                             op == Collective::kBroadcast ? 0 : -1, measured, measured, ToString(algorithms[i]),
                             timings[i].library.timed ? ToString(timings[i].library.protocol) : "-", closed * 1e6,
                             closed > 0 ? 100 * (t - closed) / closed : 0.0);
  }
  std::cout << "# Out of bounds values : N/A (simulated)\n";
  std::cout << fmt::format("# Avg bus bandwidth    : {:.4f} \n", sizes.empty() ? 0.0 : busbw_sum / sizes.size());
  return 0;
}

}  // namespace shardlab::cli
