// The layout engine asked one question at a time, as `shardlab layout`,
// `redistribute` and `devices` ask it: every structured argument is JSON text,
// and the answer is a JSON document. Errors name the argument (its option,
// such as --strategy) and the JSON pointer inside it.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace shardlab {

// One operator's layout under a strategy: device matrix, tensor maps, slices
// and the communication of rank `rank`.
struct OpLayoutQuery {
  std::string op;        // operator type, e.g. MatMul
  std::string inputs;    // [[128,64],[64,32]]
  std::string strategy;  // [[2,1],[1,4]]
  std::string attrs;     // {"transpose_b": true}; "" = none
  std::string weights;   // [1]: inputs that are parameters; "" = the family's default
  std::string dtype = "float32";
  int64_t devices = 8;
  int64_t rank = 0;
};
nlohmann::json AnswerOpLayout(const OpLayoutQuery& query);

// The communication that turns one tensor layout into another.
struct RedistributionQuery {
  std::string shape;  // [512,1024]; "" = each layout carries its own "shape"
  std::string from;   // {"device_matrix":[8,4],"tensor_map":[1,0]}
  std::string to;
  bool enable_alltoall = false;
  std::string dtype = "float32";
  int64_t rank = 0;
};
nlohmann::json AnswerRedistribution(const RedistributionQuery& query);

// A rank's coordinates and communication groups in a device matrix.
struct DeviceGroupsQuery {
  std::string matrix;      // [2,2,3]
  std::string tensor_map;  // [-1,0]; "" = none
  int64_t rank = 0;
};
nlohmann::json AnswerDeviceGroups(const DeviceGroupsQuery& query);

}  // namespace shardlab
