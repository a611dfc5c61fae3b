#include "core/graph/fp8_format.h"

#include "core/graph/graph.h"
#include "core/util/enum_names.h"

namespace shardlab {
namespace {

constexpr EnumNames<Fp8Format, 3> kFormats({"off", "e4m3", "hybrid"});

}  // namespace

const char* ToString(Fp8Format format) { return kFormats[format]; }
std::optional<Fp8Format> FindFp8Format(const std::string& name) { return kFormats.Find(name); }
std::vector<std::string> Fp8FormatNames() { return kFormats.All(); }

Fp8Format OpFp8Format(const Operator& op) {
  return FindFp8Format(op.StringAttr("fp8_format", "off")).value_or(Fp8Format::kOff);
}

std::optional<DType> Fp8GemmDType(const Operator& op, bool backward) {
  switch (OpFp8Format(op)) {
    case Fp8Format::kOff:
      return std::nullopt;
    case Fp8Format::kE4M3:
      return DType::kFloat8E4M3;
    case Fp8Format::kHybrid:
      return backward ? DType::kFloat8E5M2 : DType::kFloat8E4M3;
  }
  return std::nullopt;
}

}  // namespace shardlab
