// What a model repository folder holds, read without loading anything:
//
//   DIR/NAME/config.txt          optional: `version_policy: latest N | all | specific V...`
//   DIR/NAME/VERSION/model.pt    a TorchScript module, or model.pt2, an AOTInductor package
//
// VERSION is a positive integer; the version folder holds exactly one .pt or .pt2 file. The layout
// and the policies are Triton's (docs/models.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "torchbridge/result.hpp"

namespace tb::bridge::models {

// Which of a model's versions are served.
struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };
  Kind kind = Kind::kLatest;
  std::uint32_t latest = 1;             // kLatest: the N highest versions
  std::vector<std::uint64_t> versions;  // kSpecific: these, where present
  std::string describe() const;         // "latest 1", "all", "specific 1 3"
};

// A config.txt's text: blank lines and `#` comments aside, one `version_policy: ...` line.
Result<VersionPolicy> parse_config(const std::string& text);

// A model name a client may call and a request may name: [A-Za-z0-9_.-], not starting with '.',
// at most 128 characters. Nothing else reaches the file system.
bool valid_model_name(const std::string& name);

struct VersionFolder {
  std::uint64_t version = 0;
  std::filesystem::path file;  // the model file, empty when `error` says why there is none
  std::string stamp;           // size and modification time: a changed file is a new load
  std::string error;
};

struct ModelFolder {
  std::string name;
  VersionPolicy policy;
  std::vector<VersionFolder> versions;  // ascending
};

// DIR/NAME as above. kInvalidArgument for a name outside the alphabet or a bad config,
// kNotFound when there is no such folder.
Result<ModelFolder> scan_model(const std::filesystem::path& root, const std::string& name);

// The valid model names among DIR's folders, sorted.
std::vector<std::string> model_names(const std::filesystem::path& root);

// The versions `folder.policy` may serve, newest first, and how many of them it serves: `latest N`
// serves the N newest that load (a newer version that fails leaves an older one serving), `all`
// and `specific` serve every one listed.
struct Candidates {
  std::vector<const VersionFolder*> versions;
  std::size_t wanted = 0;
};
Candidates candidate_versions(const ModelFolder& folder);

}  // namespace tb::bridge::models
