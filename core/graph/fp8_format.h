// FP8 GEMMs: which 8-bit format a MatMul's operands take in each pass
// (Transformer Engine's recipes; Megatron-LM's --fp8-format). A MatMul with
// the "fp8_format" attribute runs its forward and backward products at the
// device's FP8 peak; its output stays in the model's dtype.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/graph/dtype.h"

namespace shardlab {

struct Operator;

enum class Fp8Format {
  kOff,     // the model's dtype everywhere ("off")
  kE4M3,    // E4M3 operands in every product ("e4m3")
  kHybrid,  // E4M3 in the forward, E5M2 gradients in the backward ("hybrid")
};

const char* ToString(Fp8Format format);
std::optional<Fp8Format> FindFp8Format(const std::string& name);
std::vector<std::string> Fp8FormatNames();

// The operator's "fp8_format" attribute (absent: kOff). The attribute's
// value is checked by shape inference.
Fp8Format OpFp8Format(const Operator& op);

// The dtype whose peak the operator's products run at in the forward or
// backward pass; nullopt when the operator is not an FP8 GEMM.
std::optional<DType> Fp8GemmDType(const Operator& op, bool backward);

}  // namespace shardlab
