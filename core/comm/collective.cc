#include "core/comm/collective.h"

#include <stdexcept>

#include "core/util/enum_names.h"

namespace shardlab {
namespace {

constexpr EnumNames<Collective, 6> kCollectiveNames(
    {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"});
constexpr EnumNames<Collective, 6> kOperatorNames(
    {"AllReduce", "AllGather", "ReduceScatter", "AlltoAll", "Broadcast", "Send"});
constexpr EnumNames<CollectiveAlgorithm, 6> kAlgorithmNames(
    {"ring", "halving_doubling", "hierarchical", "double_binary_tree", "pairwise", "direct"});
constexpr EnumNames<ReduceOp, 5> kReduceNames({"", "sum", "max", "min", "mean"});

template <typename Enum, size_t N>
Enum Parse(std::string_view name, const EnumNames<Enum, N>& names, const char* what) {
  if (auto value = names.Find(name)) return *value;
  std::string accepted;
  for (const std::string& n : names.All()) accepted += (accepted.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown " + std::string(what) + " \"" + std::string(name) + "\" (expected one of " +
                              accepted + ")");
}

}  // namespace

const char* ToString(Collective c) { return kCollectiveNames[c]; }
const char* OperatorName(Collective c) { return kOperatorNames[c]; }
const char* ToString(CollectiveAlgorithm a) { return kAlgorithmNames[a]; }
const char* ToString(ReduceOp op) { return kReduceNames[op]; }

Collective ParseCollective(std::string_view name) { return Parse(name, kCollectiveNames, "collective"); }
CollectiveAlgorithm ParseAlgorithm(std::string_view name) {
  return Parse(name, kAlgorithmNames, "collective algorithm");
}

std::vector<std::string> CollectiveNames() { return kCollectiveNames.All(); }
std::vector<std::string> AlgorithmNames() { return kAlgorithmNames.All(); }

}  // namespace shardlab
