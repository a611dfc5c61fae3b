// Element types of tensors, with their sizes and MindSpore-style names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardlab {

enum class DType { kBool, kInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };

int64_t DTypeBytes(DType dtype);
const char* ToString(DType dtype);  // "float16", "int32", ...
std::optional<DType> ParseDType(const std::string& name);
const std::vector<std::string>& DTypeNames();

}  // namespace shardlab
