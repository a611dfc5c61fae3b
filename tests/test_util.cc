#include "tests/test_util.h"

namespace shardlab::testing {

std::string SourcePath(const std::string& relative) { return std::string(SHARDLAB_SOURCE_DIR) + "/" + relative; }

ClusterSpec ShippedCluster(const std::string& name) {
  const std::string path = SourcePath("configs/clusters/" + name + ".json");
  const nlohmann::json doc = ReadJsonFile(path);
  return ReadClusterSpec(JsonNode(doc, path));
}

Doc::Doc(const std::string& text, std::string file_name)
    : json(ParseJsonText(text, file_name)), file(std::move(file_name)) {}

}  // namespace shardlab::testing
