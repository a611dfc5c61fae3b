// Cluster files, and the collective cost model over what they describe: an
// accepted cluster must price every collective, on groups inside a server
// and across servers, at every size, as a finite non-negative time.
#include <algorithm>

#include "core/config/cluster_config.h"
#include "tests/fuzz/fuzz_inputs.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateJsonInput)

SHARDLAB_FUZZ_TARGET(cluster) {
  using namespace shardlab;
  using namespace shardlab::fuzz;
  const std::string file = SourcePath("configs/clusters/fuzz-cluster.json");
  const auto doc = ParseInput(data, size, file);
  if (!doc) return 0;
  ClusterSpec cluster;
  if (!Accepts([&] { cluster = ReadClusterSpec(JsonNode(*doc, file)); })) return 0;
  const int64_t per_server = cluster.devices_per_server;
  PriceCollectives(cluster, std::min<int64_t>(per_server, 8), 1);
  if (cluster.servers > 1) PriceCollectives(cluster, std::min<int64_t>(cluster.servers, 16), per_server);
  PriceCollectives(cluster, std::min<int64_t>(cluster.device_count(), 64), 1);
  return 0;
}
