// `shardlab collective`: one collective simulated on a cluster's SimGrid
// platform, swept over sizes, printed like nccl-tests (size, time, algbw,
// busbw) next to the closed form.
#include <iostream>

#include <fmt/format.h>
#include <simgrid/s4u/Engine.hpp>

#include "cli/commands.h"
#include "core/config/units.h"
#include "core/util/json_reader.h"
#include "sim/cluster_platform.h"
#include "sim/flow_runner.h"

namespace shardlab::cli {

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
  sim::ClusterPlatform platform(cluster, last + 1);
  sim::FlowRunner runner(platform);
  std::vector<double> start(sizes.size()), end(sizes.size());
  std::vector<CollectiveAlgorithm> algorithms(sizes.size());
  std::vector<CollectiveTiming> timings(sizes.size());
  std::function<void(size_t)> launch = [&](size_t i) {
    if (i == sizes.size()) return;
    algorithms[i] = ChooseAlgorithm(op, per_rank(sizes[i]), placement, cluster, force);
    timings[i] = TimeCollective(op, algorithms[i], per_rank(sizes[i]), placement, cluster);
    start[i] = simgrid::s4u::Engine::get_clock();
    runner.Run(sim::ExpandCollective(op, algorithms[i], per_rank(sizes[i]), members, cluster.devices_per_server,
                                     fidelity, timings[i].library),
               [&, i] {
                 end[i] = simgrid::s4u::Engine::get_clock();
                 launch(i + 1);
               });
  };
  launch(0);
  platform.engine().run();

  std::cout << fmt::format("# {} over {} ranks of {} (first rank {}, stride {}: {} servers, {} per server), {} flows\n",
                           ToString(op), args.ranks, cluster.name, args.first_rank, args.stride, placement.servers,
                           placement.per_server, args.fidelity);
  std::cout << fmt::format("# {:>12} {:>20} {:>8} {:>12} {:>12} {:>12} {:>14} {:>8}\n", "size(B)", "algorithm",
                           "protocol", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "closed(us)", "diff");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double t = end[i] - start[i];
    const double closed = timings[i].seconds;
    const double algbw = t > 0 ? sizes[i] / t / 1e9 : 0;
    std::cout << fmt::format(
        "  {:>12.0f} {:>20} {:>8} {:>12.2f} {:>12.2f} {:>12.2f} {:>14.2f} {:>7.2f}%\n", sizes[i],
        ToString(algorithms[i]), timings[i].library.timed ? ToString(timings[i].library.protocol) : "-", t * 1e6, algbw,
        algbw * BusBandwidthFactor(op, args.ranks), closed * 1e6, closed > 0 ? 100 * (t - closed) / closed : 0.0);
  }
  return 0;
}

}  // namespace shardlab::cli
