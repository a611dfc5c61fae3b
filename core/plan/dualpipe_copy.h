// DualPipe's second model copy. Under the dualpipe schedule each pipeline
// stage s holds stage s of one copy of the model and stage S - 1 - s of a
// second copy, whose micro-batches enter at the last stage and flow back to
// the first (DeepSeek-V3 technical report, section 3.2.1). The lowering
// lowers both: the copy's operators, tensors and parameters are the
// model's, renamed "mirror.<name>", each operator on the mirrored stage
// with the layout its original runs.
#pragma once

#include <cstdint>

#include "core/ops/sharded_graph.h"

namespace shardlab {

// `sharded` followed by its mirrored copy: operators [0, n) are the
// original's (n its operator count), [n, 2n) the copy's, in the same order.
ShardedGraph WithDualPipeCopy(const ShardedGraph& sharded, int64_t stages);

}  // namespace shardlab
