#include "core/util/warning.h"

#include <iostream>
#include <utility>

namespace shardlab {
namespace {

WarningHandler& Handler() {
  static WarningHandler handler = [](const std::string& message) {
    std::cerr << "shardlab: warning: " << message << std::endl;
  };
  return handler;
}

}  // namespace

WarningHandler SetWarningHandler(WarningHandler handler) { return std::exchange(Handler(), std::move(handler)); }

void Warn(const std::string& message) {
  if (Handler()) Handler()(message);
}

}  // namespace shardlab
