#include "tests/e2e/cli_runner.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <sys/wait.h>

namespace shardlab::testing {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path ScratchDir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("shardlab-e2e-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

CliResult Run(const std::string& args, const std::string& launcher) {
  const fs::path out = ScratchDir() / "stdout", err = ScratchDir() / "stderr";
  const std::string cmd = std::string("cd '") + SHARDLAB_SOURCE_DIR + "' && " + launcher + " '" + SHARDLAB_BINARY +
                          "' " + args + " > '" + out.string() + "' 2> '" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

bool OnPath(const std::string& program) {
  return std::system(("command -v '" + program + "' > /dev/null 2>&1").c_str()) == 0;
}

}  // namespace shardlab::testing
