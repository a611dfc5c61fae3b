// The error an engine gives for a step it declines because of its size (more
// tasks than it takes, or a SimGrid run estimated past its time limit). The
// run itself is valid: a smaller one, or another engine, simulates it, so a
// command over many runs may go on without it (`validate` lists it as not
// simulated).
#pragma once

#include <stdexcept>

namespace shardlab {

class EngineLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace shardlab
