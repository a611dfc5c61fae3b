// One hostile input for the campaign (hostile_campaign.cc): a shardlab
// command line and the files it reads, drawn from one class of mistakes a
// careless or hostile user makes, and what shardlab must do with it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardlab::hostile {

enum class Verdict {
  kRefuse,  // the input is invalid: shardlab must exit non-zero with an error
  kEither,  // may be valid or not: any clean outcome
};

// A file the case needs in its scratch folder, by name.
struct CaseFile {
  enum class Kind {
    kText,     // `content` written as is
    kFifo,     // a named pipe nobody writes to (or reads from)
    kFolder,   // an empty folder
    kSymlink,  // a link to `content` (a path; may dangle or loop)
    kSparse,   // a file of `size` bytes, all holes
  };
  Kind kind = Kind::kText;
  std::string content;
  int64_t size = 0;
};

struct HostileCase {
  std::string klass;              // the class of mistake, for the table
  std::string what;               // this case in a few words, for failure reports
  std::vector<std::string> args;  // after the binary; "@name" is the scratch file `name`
  std::map<std::string, CaseFile> files;
  std::vector<std::string> outputs;  // scratch names the command may leave (whole) on success
  Verdict verdict = Verdict::kEither;
};

// Case `index` of the campaign with `seed`: the same pair always gives the
// same case. `source_dir` is the repository (shipped configs).
HostileCase MakeCase(uint64_t seed, uint64_t index, const std::string& source_dir);

// The classes in table order.
std::vector<std::string> CaseClasses();

}  // namespace shardlab::hostile
