#include "core/graph/dtype.h"

namespace shardlab {

const std::vector<std::string>& DTypeNames() {
  static const std::vector<std::string> names = {"bool",     "int8",    "int32",   "int64",         "float16",
                                                 "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2"};
  return names;
}

int64_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

const char* ToString(DType dtype) { return DTypeNames()[static_cast<int>(dtype)].c_str(); }

std::optional<DType> ParseDType(const std::string& name) {
  const auto& names = DTypeNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

}  // namespace shardlab
