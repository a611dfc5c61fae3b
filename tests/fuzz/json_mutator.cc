// libFuzzer's custom mutators for the fuzz targets. A JSON input is parsed
// and edited as a tree, one edit per call (json_tree_mutator.h); a protobuf
// strategy checkpoint is decoded, edited as the same tree, and encoded again. What a tree cannot express (overflowing
// literals, broken syntax, duplicate keys, stray bytes) comes from libFuzzer's byte-level mutations, used for one call
// in five and for any input that does not parse.
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "core/search/strategy_proto.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/json_tree_mutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace shardlab::fuzz {
namespace {

using json = nlohmann::json;

size_t Emit(const std::string& text, uint8_t* data, size_t size, size_t max_size) {
  if (text.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

// A strategy map as a tree and back (leniently: what is not a number or a
// list of lists of numbers is dropped, numbers are clamped to the field).
json MapToTree(const ProtoStrategyMap& map) {
  json items = json::object();
  for (const auto& [name, entry] : map.items) items[name] = {{"stage", entry.first}, {"strategy", entry.second}};
  return {{"current_stage", map.current_stage}, {"items", items}};
}

uint32_t AsUint32(const json& v) {
  if (!v.is_number()) return 0;
  const double d = v.get<double>();
  return d <= 0 || d != d ? 0 : d >= 4294967295.0 ? 4294967295u : static_cast<uint32_t>(d);
}

ProtoStrategyMap TreeToMap(const json& tree) {
  ProtoStrategyMap map;
  if (!tree.is_object()) return map;
  if (tree.contains("current_stage")) map.current_stage = AsUint32(tree["current_stage"]);
  if (!tree.contains("items") || !tree["items"].is_object()) return map;
  for (const auto& item : tree["items"].items()) {
    const json& v = item.value();
    if (!v.is_object()) continue;
    Strategy strategy;
    if (v.contains("strategy") && v["strategy"].is_array())
      for (const json& tuple : v["strategy"]) {
        if (!tuple.is_array()) continue;
        std::vector<int64_t> dims;
        for (const json& d : tuple) dims.push_back(AsUint32(d));
        strategy.push_back(dims);
      }
    map.items[item.key()] = {v.contains("stage") ? AsUint32(v["stage"]) : 0, strategy};
  }
  return map;
}

}  // namespace

size_t MutateJsonInput(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  if (seed % 5 == 0) return LLVMFuzzerMutate(data, size, max_size);
  json doc = json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return LLVMFuzzerMutate(data, size, max_size);
  MutateJsonTree(doc, seed);
  return Emit(doc.dump(seed % 3 == 0 ? 2 : -1, ' ', false, json::error_handler_t::replace), data, size, max_size);
}

size_t MutateStrategyMapInput(uint8_t* data, size_t size, size_t max_size, unsigned seed) {
  if (seed % 5 == 0) return LLVMFuzzerMutate(data, size, max_size);
  json tree;
  try {
    tree = MapToTree(DecodeStrategyMap(std::string(reinterpret_cast<const char*>(data), size)));
  } catch (const std::runtime_error&) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  MutateJsonTree(tree, seed);
  return Emit(EncodeStrategyMap(TreeToMap(tree)), data, size, max_size);
}

}  // namespace shardlab::fuzz
