// The JSON arguments of `shardlab layout`, `redistribute` and `devices`. An
// input is an object naming the command and its options; an option given as
// a JSON value is passed as that value's text, one given as a string is
// passed as is (so raw, broken argument text is fuzzed too). An accepted
// query must answer a JSON object.
#include "core/ops/layout_queries.h"
#include "tests/fuzz/fuzz_inputs.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateJsonInput)

namespace shardlab::fuzz {

// The option's argument text: a string as is, anything else as JSON.
std::string Argument(const nlohmann::json& input, const char* key, const std::string& fallback) {
  if (!input.contains(key)) return fallback;
  const nlohmann::json& v = input[key];
  return v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int64_t Number(const nlohmann::json& input, const char* key, int64_t fallback) {
  if (!input.contains(key) || !input[key].is_number_integer()) return fallback;
  return input[key].get<int64_t>();
}

}  // namespace shardlab::fuzz

SHARDLAB_FUZZ_TARGET(cli_args) {
  using namespace shardlab;
  using namespace shardlab::fuzz;
  nlohmann::json input = nlohmann::json::parse(data, data + size, nullptr, false);
  if (input.is_discarded() || !input.is_object()) return 0;
  const std::string command = Argument(input, "command", "layout");
  nlohmann::json answer;
  bool accepted = false;
  if (command == "layout") {
    OpLayoutQuery q;
    q.op = Argument(input, "op", "MatMul");
    q.inputs = Argument(input, "inputs", "");
    q.strategy = Argument(input, "strategy", "");
    q.attrs = Argument(input, "attrs", "");
    q.weights = Argument(input, "weights", "");
    q.dtype = Argument(input, "dtype", "float32");
    q.devices = Number(input, "devices", 8);
    q.rank = Number(input, "rank", 0);
    accepted = Accepts([&] { answer = AnswerOpLayout(q); });
  } else if (command == "redistribute") {
    RedistributionQuery q;
    q.shape = Argument(input, "shape", "");
    q.from = Argument(input, "from", "");
    q.to = Argument(input, "to", "");
    q.enable_alltoall = input.contains("enable_alltoall") && input["enable_alltoall"] == true;
    q.dtype = Argument(input, "dtype", "float32");
    q.rank = Number(input, "rank", 0);
    accepted = Accepts([&] { answer = AnswerRedistribution(q); });
  } else {
    DeviceGroupsQuery q;
    q.matrix = Argument(input, "matrix", "");
    q.tensor_map = Argument(input, "tensor_map", "");
    q.rank = Number(input, "rank", 0);
    accepted = Accepts([&] { answer = AnswerDeviceGroups(q); });
  }
  if (accepted) Expect(answer.is_object(), "an answer that is not a JSON object");
  return 0;
}
