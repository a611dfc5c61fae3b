// Loads shardlab's modules: shared objects holding a back end whose libraries
// only some commands need (the SimGrid engine, the GPU back end), so that
// every other command starts without mapping them. A module exports one
// extern "C" entry point that returns its table of functions.
#pragma once

#include <functional>
#include <string>

namespace shardlab {

struct ModuleSearch {
  std::string what;          // "the SimGrid engine": names the module in errors
  std::string file_name;     // "libshardlab_simgrid.so"
  std::string env_variable;  // a path here replaces the search: "SHARDLAB_SIMGRID_MODULE"
  std::string build_dir;     // the build tree's folder of modules, for programs built elsewhere in it
  std::string entry_symbol;  // the extern "C" entry point
};

// Opens the first module found ($env_variable when set, else next to the
// running executable, else in build_dir) whose entry point `enter` accepts:
// `enter` gets the entry's address and returns the module's table, or null
// when the module is not of this build. Throws std::runtime_error naming
// every path tried and why it failed. Loads once per process and file name:
// later calls return the same table or throw the same error. A module is
// never unloaded.
const void* LoadModule(const ModuleSearch& search, const std::function<const void*(void* entry)>& enter);

}  // namespace shardlab
