// Helpers shared by the unit tests: JSON documents from text, the repository
// root, and checks that a ConfigError names the right place.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/config/cluster_config.h"
#include "core/util/config_error.h"
#include "core/util/json_reader.h"

namespace shardlab::testing {

std::string SourcePath(const std::string& relative);  // a path inside the repository

ClusterSpec ShippedCluster(const std::string& name);  // configs/clusters/<name>.json

// Holds a parsed document so JsonNodes into it stay valid.
struct Doc {
  explicit Doc(const std::string& text, std::string file = "test.json");
  JsonNode root() const { return JsonNode(json, file); }
  nlohmann::json json;
  std::string file;
};

// Runs `fn` and returns the ConfigError it throws; fails the test when it
// throws nothing or something else.
template <typename Fn>
ConfigError ExpectConfigError(Fn&& fn);

}  // namespace shardlab::testing

#include <catch2/catch.hpp>

namespace shardlab::testing {

template <typename Fn>
ConfigError ExpectConfigError(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e;
  }
  FAIL("expected a ConfigError");
  return ConfigError("", "", "");
}

}  // namespace shardlab::testing
