// Runs the `shardlab` binary for the end-to-end tests: from the repository
// root, capturing stdout, stderr and the exit code.
#pragma once

#include <filesystem>
#include <string>

namespace shardlab::testing {

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::filesystem::path& p);

// A scratch folder for this test process.
std::filesystem::path ScratchDir();

// `shardlab ARGS` (ARGS already shell-quoted), optionally behind a launcher
// such as "mpirun -np 2".
CliResult Run(const std::string& args, const std::string& launcher = "");

// Whether `program` is on PATH.
bool OnPath(const std::string& program);

}  // namespace shardlab::testing
