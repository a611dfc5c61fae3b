// The operator types shardlab knows, with MindSpore's primitive names and how
// many inputs each takes and which attributes it reads. Graphs may only use
// these types and attributes.
#pragma once

#include <string>
#include <vector>

namespace shardlab {

struct OpTypeInfo {
  std::string name;
  int min_inputs;
  int max_inputs;
  const char* family;               // the core/ops family that gives its sharding rules
  std::vector<std::string> attrs;  // the attributes it reads; any type also takes "primitive_target"
};

const std::vector<OpTypeInfo>& OpTypes();
const OpTypeInfo* FindOpType(const std::string& name);
std::vector<std::string> OpTypeNames();

}  // namespace shardlab
