// The communication vocabulary every layer shares: the collectives operators
// and redistributions insert, the reduction they apply and the algorithms a
// collective library runs them with. Closed sets, so a misspelt name is an
// error where it is read, never a silent default.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardlab {

enum class Collective {
  kAllReduce,      // every rank ends with the reduction of all ranks' buffers
  kAllGather,      // every rank ends with all ranks' buffers, concatenated
  kReduceScatter,  // every rank ends with its slice of the reduction
  kAllToAll,       // every rank sends a slice of its buffer to each peer (MindSpore's AlltoAll)
  kBroadcast,      // one rank's buffer reaches every rank
  kSendRecv,       // one point-to-point transfer (pipeline sends, host copies)
};

// How the reduced collectives combine buffers; kNone for the others.
enum class ReduceOp { kNone, kSum, kMax, kMin, kMean };

enum class CollectiveAlgorithm {
  kRing,              // ring over all ranks (HCCL and NCCL inside a server)
  kHalvingDoubling,   // recursive halving-doubling (HCCL across a power-of-two server count)
  kHierarchical,      // inside each server, then across servers, then inside again
  kDoubleBinaryTree,  // NCCL's TREE: a chain inside each server, two pipelined binary trees across servers
  kPairwise,          // AllToAll by pairwise exchanges
  kDirect,            // one transfer (SendRecv)
  kNvls,              // NCCL's NVLS: NVLink SHARP, the NVSwitch reduces and multicasts (one server)
  kNvlsTree,          // NCCL's NVLS_TREE: NVLS inside each server, trees across servers
  kFullMesh,          // HCCL's mesh inside one HCCS full-mesh group: every rank to every peer at once, each
                      // over its own link
};

// How NCCL moves data between GPUs on a channel (its "protocols"): a
// trade of latency against bandwidth.
enum class Protocol {
  kSimple,  // bulk copies with a flag per chunk: the full bandwidth, the most latency ("simple")
  kLL128,   // 128-byte lines of 120 payload bytes and a flag: ~92% of it, less latency ("ll128")
  kLL,      // 8-byte words each with its own flag: half of it, the least latency ("ll")
};

// Config and command-line spelling: "allreduce", "alltoall", "sendrecv".
const char* ToString(Collective c);
// The operator name MindSpore inserts: "AllReduce", "AlltoAll", "Send".
const char* OperatorName(Collective c);
// "ring", "halving_doubling", ...
const char* ToString(CollectiveAlgorithm a);
// "simple", "ll128", "ll".
const char* ToString(Protocol p);
// "sum", "max", "min", "mean"; "" for kNone.
const char* ToString(ReduceOp op);

// The parsers take the config spelling and throw std::invalid_argument
// naming the accepted values.
Collective ParseCollective(std::string_view name);
CollectiveAlgorithm ParseAlgorithm(std::string_view name);

// The parallel dimension a collective serves; reports split communication by it.
enum class CommDimension {
  kTensor,    // operator-level: tensor-parallel reductions and redistributions between layouts ("tensor")
  kData,      // gradient buckets and the parallel optimizer's weight gathers ("data")
  kPipeline,  // activations and their gradients between neighbouring stages ("pipeline")
  kExpert,    // tokens exchanged with their experts, the redistributions after MoeDispatch and before MoeCombine
              // ("expert")
  kContext,   // keys and values gathered (or passed around a ring) over the context-parallel group for attention,
              // their gradients reduce-scattered ("context")
  kSequence,  // sequence parallelism's (Megatron-SP's) exchanges around each tensor-parallel block: the AllGather of
              // the sequence-split activations before it, the ReduceScatter of its output rows after it, and their
              // gradients ("sequence")
};
inline constexpr int kCommDimensions = 6;

const char* ToString(CommDimension dimension);
// Inverse of ToString; throws std::invalid_argument naming the value.
CommDimension ParseCommDimension(const std::string& name);
std::vector<std::string> CommDimensionNames();

// Every collective's and algorithm's config spelling, in enum order.
std::vector<std::string> CollectiveNames();
std::vector<std::string> AlgorithmNames();

}  // namespace shardlab
