// What an operator's backward reads of its forward: the tensors autograd
// keeps from the forward pass until the backward has run. These, not every
// forward output, are a training step's activation memory (Korthikanti et
// al., "Reducing Activation Recomputation in Large Transformer Models", 2022,
// §4.1: 34·s·b·h + 5·a·s²·b bytes per transformer layer in 16-bit, each term
// an input some backward needs; a residual add or a bias keeps nothing).
#pragma once

#include <vector>

#include "core/graph/graph.h"

namespace shardlab {

struct SavedTensors {
  std::vector<int> inputs;   // positions in op.inputs: parameters among them are not activations
  std::vector<int> outputs;  // positions in op.outputs
  bool mask = false;         // a one-byte mask per element of output 0 (Dropout's kept positions)
};

SavedTensors SavedForBackward(const Operator& op);

}  // namespace shardlab
