#include "repository_scan.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tb::bridge::models {

namespace fs = std::filesystem;

namespace {

// A positive decimal integer without sign or leading zeros (so that "01" and "1" are not two
// folders of one version).
bool parse_version(const std::string& s, std::uint64_t& out) {
  if (s.empty() || s.size() > 18 || s[0] == '0') return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

VersionFolder read_version(const fs::path& dir, std::uint64_t version) {
  VersionFolder v;
  v.version = version;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto ext = entry.path().extension();
    if ((ext == ".pt" || ext == ".pt2") && entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  if (ec) {
    v.error = fmt::format("cannot read {}: {}", dir.string(), ec.message());
  } else if (files.size() != 1) {
    v.error =
        fmt::format("{} holds {} model files (.pt, .pt2), not one", dir.string(), files.size());
  }
  if (!v.error.empty()) {
    v.stamp = "invalid:" + v.error;  // tried once, not at every poll
  } else {
    v.file = files[0];
    const auto size = fs::file_size(v.file, ec);
    const auto time = fs::last_write_time(v.file, ec).time_since_epoch().count();
    v.stamp = fmt::format("{}:{}:{}", v.file.filename().string(), size, time);
  }
  return v;
}

}  // namespace

std::string VersionPolicy::describe() const {
  switch (kind) {
    case Kind::kLatest:
      return fmt::format("latest {}", latest);
    case Kind::kAll:
      return "all";
    case Kind::kSpecific:
      return fmt::format("specific {}", fmt::join(versions, " "));
  }
  return "";
}

Result<VersionPolicy> parse_config(const std::string& text) {
  VersionPolicy policy;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos || trim(line.substr(0, colon)) != "version_policy") {
      return make_error(ErrorCode::kInvalidArgument,
                        "config.txt: `{}` is not `version_policy: latest N | all | specific V...`",
                        line);
    }
    std::istringstream words(line.substr(colon + 1));
    std::string kind;
    words >> kind;
    std::vector<std::uint64_t> numbers;
    for (std::string w; words >> w;) {
      std::uint64_t n = 0;
      if (!parse_version(w, n)) {
        return make_error(ErrorCode::kInvalidArgument, "config.txt: `{}` is not a version", w);
      }
      numbers.push_back(n);
    }
    if (kind == "latest" && numbers.size() == 1 && numbers[0] >= 1 && numbers[0] <= 1000) {
      policy = VersionPolicy{VersionPolicy::Kind::kLatest, static_cast<std::uint32_t>(numbers[0])};
    } else if (kind == "all" && numbers.empty()) {
      policy = VersionPolicy{VersionPolicy::Kind::kAll};
    } else if (kind == "specific" && !numbers.empty()) {
      policy = VersionPolicy{VersionPolicy::Kind::kSpecific, 0, numbers};
    } else {
      return make_error(ErrorCode::kInvalidArgument,
                        "config.txt: `{}`: the policy is `latest N` (N from 1 to 1000), `all` or "
                        "`specific V...`",
                        line);
    }
  }
  return policy;
}

bool valid_model_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

Result<ModelFolder> scan_model(const fs::path& root, const std::string& name) {
  if (!valid_model_name(name)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "\"{}\" is not a model name (letters, digits, _ - . and not a leading .)",
                      name.substr(0, 128));
  }
  const fs::path dir = root / name;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return make_error(ErrorCode::kNotFound, "the model repository has no model \"{}\"", name);
  }
  ModelFolder folder;
  folder.name = name;
  if (std::ifstream config(dir / "config.txt"); config) {
    std::stringstream text;
    text << config.rdbuf();
    auto policy = parse_config(text.str());
    if (!policy) return with_context(policy.error(), fmt::format("model \"{}\"", name));
    folder.policy = std::move(policy).value();
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::uint64_t version = 0;
    if (!entry.is_directory(ec) || !parse_version(entry.path().filename().string(), version)) {
      continue;
    }
    folder.versions.push_back(read_version(entry.path(), version));
  }
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "cannot read {}: {}", dir.string(),
                      ec.message());
  }
  std::sort(folder.versions.begin(), folder.versions.end(),
            [](const auto& a, const auto& b) { return a.version < b.version; });
  return folder;
}

std::vector<std::string> model_names(const fs::path& root) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && valid_model_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Candidates candidate_versions(const ModelFolder& folder) {
  Candidates out;
  const auto& p = folder.policy;
  for (auto it = folder.versions.rbegin(); it != folder.versions.rend(); ++it) {
    if (p.kind == VersionPolicy::Kind::kSpecific &&
        std::find(p.versions.begin(), p.versions.end(), it->version) == p.versions.end()) {
      continue;
    }
    out.versions.push_back(&*it);
  }
  out.wanted = p.kind == VersionPolicy::Kind::kLatest ? p.latest : out.versions.size();
  return out;
}

}  // namespace tb::bridge::models
