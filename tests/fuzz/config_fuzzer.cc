// libFuzzer target for the config loaders: any bytes go in; the only
// acceptable outcomes are a loaded config or a ConfigError / GraphError.
// Anything else (a crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config/cluster_config.h"
#include "core/config/model_config.h"
#include "core/config/parallel_config.h"
#include "core/config/run_config.h"
#include "core/graph/graph.h"
#include "core/util/json_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardlab;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json document;
  try {
    document = ParseJsonText(text, "fuzz.json");
  } catch (const ConfigError&) {
    return 0;
  }
  const JsonNode root(document, "fuzz.json");
  auto attempt = [](auto&& load) {
    try {
      load();
    } catch (const ConfigError&) {
    } catch (const GraphError&) {
    }
  };
  attempt([&] { ReadRunSpec(root); });
  attempt([&] { ReadClusterSpec(root); });
  attempt([&] { ReadModelSpec(root); });
  attempt([&] { ReadParallelConfig(root, 64); });
  return 0;
}
