#include "tests/test_util.h"

namespace shardlab::testing {

std::string SourcePath(const std::string& relative) { return std::string(SHARDLAB_SOURCE_DIR) + "/" + relative; }

Doc::Doc(const std::string& text, std::string file_name)
    : json(ParseJsonText(text, file_name)), file(std::move(file_name)) {}

}  // namespace shardlab::testing
