// How a fuzz target is declared. Each target file defines one entry with
// SHARDLAB_FUZZ_TARGET(name) { ... } and names its mutator. Built with
// SHARDLAB_FUZZ (clang, -fsanitize=fuzzer) the entry is the binary's
// LLVMFuzzerTestOneInput and the mutator its LLVMFuzzerCustomMutator; built
// for replay (any compiler) the entries register by name in `fuzz_replay`,
// which runs the committed corpus through them in the ordinary test build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardlab::fuzz {

using FuzzEntry = int (*)(const uint8_t* data, size_t size);
bool RegisterFuzzTarget(const std::string& name, FuzzEntry entry);

// Structure-aware mutators (json_mutator.h): edit the parsed document, fall
// back to libFuzzer's byte mutations for what a tree cannot express.
size_t MutateJsonInput(uint8_t* data, size_t size, size_t max_size, unsigned seed);
size_t MutateStrategyMapInput(uint8_t* data, size_t size, size_t max_size, unsigned seed);

}  // namespace shardlab::fuzz

#if defined(SHARDLAB_FUZZ_REPLAY)
#define SHARDLAB_FUZZ_TARGET(name)                                                                                  \
  static int name##_entry(const uint8_t* data, size_t size);                                                        \
  [[maybe_unused]] static const bool name##_registered = ::shardlab::fuzz::RegisterFuzzTarget(#name, name##_entry); \
  static int name##_entry(const uint8_t* data, size_t size)
#define SHARDLAB_FUZZ_MUTATOR(mutate)
#else
#define SHARDLAB_FUZZ_TARGET(name) extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#define SHARDLAB_FUZZ_MUTATOR(mutate)                                                                     \
  extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned seed) { \
    return ::shardlab::fuzz::mutate(data, size, max_size, seed);                                          \
  }
#endif
