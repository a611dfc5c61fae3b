// Element types of tensors, with their sizes and MindSpore-style names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardlab {

// The 8-bit floats are FP8 GEMM operand formats (E4M3: 4 exponent bits, 3
// mantissa bits; E5M2: more range for gradients), with MindSpore's names.
enum class DType {
  kBool,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kFloat8E4M3,  // "float8_e4m3fn"
  kFloat8E5M2,  // "float8_e5m2"
};

int64_t DTypeBytes(DType dtype);
const char* ToString(DType dtype);  // "float16", "int32", ...
std::optional<DType> ParseDType(const std::string& name);
const std::vector<std::string>& DTypeNames();

}  // namespace shardlab
