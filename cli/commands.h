// The `shardlab` subcommands. main.cc parses arguments (CLI11 lives only
// there); each command is a plain function that returns the process exit code
// and throws for user errors, which main turns into one line on stderr.
#pragma once

#include <string>

namespace shardlab::cli {

struct SimulateArgs {
  std::string run_file;
  std::string out_file;  // result JSON; "" = none
  bool json = false;     // print JSON instead of text
};
int Simulate(const SimulateArgs& args);

struct GraphArgs {
  std::string model_file;
  std::string save_file;  // write the operator graph as JSON; "" = none
  bool json = false;
  int64_t pipeline_stages = 1;
};
int GraphCommand(const GraphArgs& args);

// Lists the model builders and their parameters.
int Models();

}  // namespace shardlab::cli
