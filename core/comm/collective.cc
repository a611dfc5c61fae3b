#include "core/comm/collective.h"

#include "core/util/enum_names.h"

namespace shardlab {
namespace {

constexpr EnumNames<Collective, 6> kCollectiveNames(
    {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"});
constexpr EnumNames<Collective, 6> kOperatorNames(
    {"AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "Broadcast", "Send"});
constexpr EnumNames<CollectiveAlgorithm, 9> kAlgorithmNames({"ring", "halving_doubling", "hierarchical",
                                                              "double_binary_tree", "pairwise", "direct", "nvls",
                                                              "nvls_tree", "full_mesh"});
constexpr EnumNames<Protocol, 3> kProtocolNames({"simple", "ll128", "ll"});
constexpr EnumNames<ReduceOp, 5> kReduceNames({"", "sum", "max", "min", "mean"});
constexpr EnumNames<CommDimension, kCommDimensions> kDimensions({"tensor", "data", "pipeline", "expert", "context",
                                                                 "sequence"});

}  // namespace

const char* ToString(Collective c) { return kCollectiveNames[c]; }
const char* OperatorName(Collective c) { return kOperatorNames[c]; }
const char* ToString(CollectiveAlgorithm a) { return kAlgorithmNames[a]; }
const char* ToString(Protocol p) { return kProtocolNames[p]; }
const char* ToString(ReduceOp op) { return kReduceNames[op]; }

Collective ParseCollective(std::string_view name) { return kCollectiveNames.Parse(name, "collective"); }
CollectiveAlgorithm ParseAlgorithm(std::string_view name) {
  return kAlgorithmNames.Parse(name, "collective algorithm");
}

const char* ToString(CommDimension dimension) { return kDimensions[dimension]; }
CommDimension ParseCommDimension(const std::string& name) { return kDimensions.Parse(name, "communication dimension"); }
std::vector<std::string> CommDimensionNames() { return kDimensions.All(); }

std::vector<std::string> CollectiveNames() { return kCollectiveNames.All(); }
std::vector<std::string> AlgorithmNames() { return kAlgorithmNames.All(); }

}  // namespace shardlab
