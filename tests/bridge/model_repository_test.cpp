// The model repository (issue 41): versions load, swap, fail and unload while calls run, and only
// from the repository's folder. The calls here go straight to the registry the sessions use; the
// Burn client's view is tests/interop/tests/model_repository.rs.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>

#include "backends/libtorch/test_modules.hpp"
#include "bridge/host_raw_client.hpp"
#include "model_repository.hpp"

namespace tb::test {
namespace {

namespace fs = std::filesystem;
using backend::libtorch::CustomOpCall;
using backend::libtorch::CustomOpRegistry;
using bridge::ModelControl;
using bridge::models::Control;
using bridge::models::ModelRepository;
using bridge::models::RepositoryOptions;
using ::testing::HasSubstr;

// A repository folder of its own, removed afterwards.
class RepoDir {
 public:
  RepoDir() {
    static std::atomic<int> n{0};
    root_ = fs::temp_directory_path() / fmt::format("tb_repo_{}_{}", ::getpid(), n++);
    fs::create_directories(root_);
  }
  ~RepoDir() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  const fs::path& root() const { return root_; }
  // NAME/VERSION/model.pt holding `bytes`, put in place by a rename (as a deployment would).
  void put_bytes(const std::string& name, int version, const std::string& bytes,
                 const std::string& file = "model.pt") {
    const fs::path dir = root_ / name / std::to_string(version);
    fs::create_directories(dir);
    const fs::path partial = dir / (file + ".partial");
    std::ofstream(partial, std::ios::binary) << bytes;
    fs::rename(partial, dir / file);
  }
  void put(const std::string& name, int version, const std::string& module) {
    std::ifstream in(test_module_path(module), std::ios::binary);
    put_bytes(name, version, std::string(std::istreambuf_iterator<char>(in), {}));
  }
  void config(const std::string& name, const std::string& text) {
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / "config.txt") << text;
  }
  void remove(const std::string& name, int version) {
    fs::remove_all(root_ / name / std::to_string(version));
  }

 private:
  fs::path root_;
};

// A repository on the CPU over a registry of its own.
struct Served {
  explicit Served(const RepoDir& dir, Control control = Control::kExplicit,
                  std::chrono::milliseconds poll = std::chrono::milliseconds(5000)) {
    RepositoryOptions o;
    o.root = dir.root();
    o.control = control;
    o.poll_interval = poll;
    o.devices = {"cpu"};
    repo = std::make_shared<ModelRepository>(o, registry);
  }
  // What `id` answers for x = [1, 2] (its first element minus 1: the version's k), or the error.
  Result<float> added(const std::string& id) const {
    std::string why;
    const auto handler = registry->find(id, why);
    if (!handler) return make_error(ErrorCode::kNotFound, "{}", why);
    const ir::CustomOpIr op{id, {}, {}, {}};
    auto out = (*handler)(CustomOpCall{op, {at::tensor({1.0f, 2.0f})}, at::Device(at::kCPU)});
    if (!out) return out.error();
    return out.value().at(0)[0].item<float>() - 1.0f;
  }
  // Loads what the folder holds and starts the control thread, as serve does.
  void start() {
    repo->load_all();
    repo->start();
  }
  ModelControl::Answer ask(ModelControl::Action action, const std::string& name) {
    std::promise<ModelControl::Answer> answer;
    repo->request(action, name, [&](ModelControl::Answer a) { answer.set_value(std::move(a)); });
    return answer.get_future().get();
  }
  ModelControl::Answer load(const std::string& name) {
    return ask(ModelControl::Action::kLoad, name);
  }

  std::shared_ptr<CustomOpRegistry> registry = std::make_shared<CustomOpRegistry>();
  std::shared_ptr<ModelRepository> repo;
};

float served_k(const Served& s) {
  const auto r = s.added("plus");
  return r ? r.value() : 0.0f;
}

constexpr std::uint64_t kPlusBytes = 16 * sizeof(float);  // plus_one's and plus_two's buffer

TEST(ModelRepository, ServesTheNewestVersionAndEachVersionByName) {
  RepoDir dir;
  dir.put("plus", 1, "plus_one");
  dir.put("plus", 2, "plus_two");
  dir.config("plus", "# both\nversion_policy: all\n");
  Served s(dir);
  const std::string text = s.repo->load_all();
  EXPECT_THAT(text, HasSubstr("Model plus@1: forward(Tensor x) -> Tensor (TorchScript"));
  EXPECT_EQ(s.added("plus").value(), 2.0f);
  EXPECT_EQ(s.added("plus@1").value(), 1.0f);
  EXPECT_EQ(s.added("plus@2").value(), 2.0f);
  // The training contract follows the same names.
  EXPECT_TRUE(s.registry->find("plus::spec"));
  EXPECT_TRUE(s.registry->find("plus@1::backward"));
  EXPECT_THAT(s.repo->list_json(), HasSubstr("\"name\":\"plus\",\"serving\":2"));
  EXPECT_EQ(s.repo->ledger().bytes().at("cpu"), 2 * kPlusBytes);
  // The default policy serves the newest only.
  dir.config("plus", "");
  s.repo->start();
  EXPECT_EQ(s.load("plus").status, 200u);
  EXPECT_FALSE(s.added("plus@1"));
  EXPECT_THAT(s.added("plus@1").error().what(), HasSubstr("latest 1"));
  EXPECT_EQ(s.repo->ledger().bytes().at("cpu"), kPlusBytes);
}

TEST(ModelRepository, ACallInFlightFinishesOnItsVersionWhichIsFreedAfterIt) {
  RepoDir dir;
  dir.put("plus", 1, "plus_one");
  Served s(dir);
  s.start();
  auto old_version = s.registry->find("plus");  // what a running call holds
  dir.put("plus", 2, "plus_two");
  const auto answer = s.load("plus");
  EXPECT_EQ(answer.status, 200u) << answer.body;
  EXPECT_EQ(s.added("plus").value(), 2.0f);
  const ir::CustomOpIr op{"plus", {}, {}, {}};
  auto out = (*old_version)(CustomOpCall{op, {at::zeros({2})}, at::Device(at::kCPU)});
  ASSERT_TRUE(out);
  EXPECT_EQ(out.value()[0][0].item<float>(), 1.0f);
  // Both versions' weights are held until the old one's last call lets go.
  EXPECT_EQ(s.repo->ledger().bytes().at("cpu"), 2 * kPlusBytes);
  old_version.reset();
  EXPECT_EQ(s.repo->ledger().bytes().at("cpu"), kPlusBytes);
}

TEST(ModelRepository, ABadVersionIsRefusedWithItsReasonAndTheOldOneKeepsServing) {
  RepoDir dir;
  dir.put("plus", 1, "plus_one");
  Served s(dir);
  s.start();
  struct Case {
    const char* what;
    std::function<void()> make;
    const char* reason;
  };
  const Case cases[] = {
      {"corrupt", [&] { dir.put_bytes("plus", 2, "not a model"); }, "cannot"},
      {"signature", [&] { dir.put("plus", 2, "sum_and_argmax"); }, "signature"},
      {"two files",
       [&] {
         dir.put("plus", 2, "plus_two");
         dir.put_bytes("plus", 2, "x", "other.pt2");
       },
       "not one"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    dir.remove("plus", 2);
    c.make();
    const auto answer = s.load("plus");
    EXPECT_EQ(answer.status, 422u);
    EXPECT_THAT(answer.body, HasSubstr("\"state\":\"failed\""));
    EXPECT_THAT(answer.body, HasSubstr(c.reason));
    EXPECT_EQ(s.added("plus").value(), 1.0f) << "the working version keeps serving";
  }
  EXPECT_THAT(s.repo->metrics_text(),
              HasSubstr("torchbridge_model_load_failures_total{model=\"plus\"} 3"));
}

TEST(ModelRepository, UnloadEndsLaterCallsWithTheModelsName) {
  RepoDir dir;
  dir.put("plus", 1, "plus_one");
  Served s(dir);
  s.start();
  EXPECT_EQ(s.ask(ModelControl::Action::kUnload, "plus").status, 200u);
  const auto after = s.added("plus");
  ASSERT_FALSE(after);
  EXPECT_THAT(after.error().what(), HasSubstr("model \"plus\" was unloaded"));
  EXPECT_EQ(s.repo->ledger().bytes().count("cpu"), 0u);
  EXPECT_EQ(s.ask(ModelControl::Action::kUnload, "other").status, 404u);
  EXPECT_EQ(s.load("plus").status, 200u);
  EXPECT_EQ(s.added("plus").value(), 1.0f);
}

TEST(ModelRepository, NothingOutsideTheRepositoryIsNamed) {
  RepoDir dir;
  dir.put("plus", 1, "plus_one");
  RepoDir outside;
  outside.put("secret", 1, "plus_two");
  Served s(dir);
  s.start();
  const std::string escape = fs::relative(outside.root() / "secret", dir.root()).string();
  for (const std::string& name :
       {std::string(".."), std::string("../plus"), std::string("%2E%2E"), std::string("a/b"),
        std::string(""), std::string(".plus"), escape, outside.root().string() + "/secret"}) {
    SCOPED_TRACE(name);
    const auto answer = s.load(name);
    EXPECT_EQ(answer.status, 400u) << answer.body;
    EXPECT_EQ(s.ask(ModelControl::Action::kUnload, name).status, 400u);
  }
  EXPECT_EQ(s.load("missing").status, 404u);
  EXPECT_FALSE(s.registry->find("secret"));
}

TEST(ModelRepository, PollingFollowsTheFolder) {
  RepoDir dir;
  dir.put("plus", 1, "plus_one");
  Served s(dir, Control::kPoll, std::chrono::milliseconds(20));
  s.start();
  dir.put("plus", 2, "plus_two");
  EXPECT_TRUE(eventually([&] { return served_k(s) == 2.0f; }));
  dir.remove("plus", 2);
  EXPECT_TRUE(eventually([&] { return served_k(s) == 1.0f; }));
  // remove_all is no single step: a poll may first see the folder empty (no version served), then
  // gone; a call's error says what happened last.
  fs::remove_all(dir.root() / "plus");
  EXPECT_TRUE(eventually([&] {
    const auto r = s.added("plus@1");
    return !r && std::string(r.error().what()).find("left the repository") != std::string::npos;
  }));
  EXPECT_THAT(s.added("plus").error().what(), HasSubstr("left the repository"));
  // Requests change nothing in this mode: the folder decides.
  EXPECT_EQ(s.load("plus").status, 409u);
}

// A package compiled for another device (its metadata rewritten by make_aoti_models.py) is refused
// like any bad version; CTest passes the packages' folder in TB_AOTI_MODELS.
TEST(ModelRepository, APackageForAnotherDeviceIsRefused) {
  const char* packages = std::getenv("TB_AOTI_MODELS");
  if (packages == nullptr || *packages == '\0') {
    GTEST_SKIP() << "no TB_AOTI_MODELS: this build makes no AOTInductor packages";
  }
  auto read = [&](const std::string& name) {
    std::ifstream in(fmt::format("{}/{}.pt2", packages, name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  RepoDir dir;
  dir.put_bytes("mlp", 1, read("mlp"), "model.pt2");
  Served s(dir);
  EXPECT_THAT(s.repo->load_all(), HasSubstr("Model mlp@1: forward(2 tensors) -> 2 tensors"));
  s.repo->start();
  dir.put_bytes("mlp", 2, read("mlp_for_cuda"), "model.pt2");
  const auto answer = s.load("mlp");
  EXPECT_EQ(answer.status, 422u);
  EXPECT_THAT(answer.body, HasSubstr("was compiled for cuda, not for device cpu"));
  EXPECT_THAT(s.repo->list_json(), HasSubstr("\"serving\":1"));
  EXPECT_TRUE(s.registry->find("mlp@1"));
}

// Calls from several threads while versions load and unload: every call answers from one version
// or fails because the model is unloaded, never anything else (run under ASan by scripts/sanitize).
TEST(ModelRepository, CallsLoadsAndUnloadsAtOnce) {
  RepoDir dir;
  dir.put("plus", 1, "plus_one");
  Served s(dir);
  s.start();
  std::atomic<bool> done{false};
  std::atomic<int> answered{0}, refused{0}, wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      while (!done) {
        const auto r = s.added("plus");
        if (r && (r.value() == 1.0f || r.value() == 2.0f)) {
          ++answered;
        } else if (!r && std::string(r.error().what()).find("unloaded") != std::string::npos) {
          ++refused;
        } else {
          if (wrong++ == 0) {
            ADD_FAILURE() << (r ? fmt::format("answered {}", r.value()) : r.error().what());
          }
        }
      }
    });
  }
  for (int i = 0; i < 12; ++i) {
    if (i % 3 == 2) {
      const int before = refused;
      EXPECT_EQ(s.ask(ModelControl::Action::kUnload, "plus").status, 200u);
      EXPECT_TRUE(eventually([&] { return refused > before; }));
    } else {
      dir.remove("plus", 1);
      dir.put("plus", 1, i % 2 ? "plus_two" : "plus_one");
      EXPECT_EQ(s.load("plus").status, 200u);
    }
  }
  done = true;
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(answered.load(), 0);
  EXPECT_GT(refused.load(), 0);
}

}  // namespace
}  // namespace tb::test

namespace tb::test {
namespace {

using bridge::models::candidate_versions;
using bridge::models::ModelFolder;
using bridge::models::parse_config;
using bridge::models::valid_model_name;
using bridge::models::VersionPolicy;

TEST(RepositoryScan, ConfigNamesOnePolicy) {
  EXPECT_EQ(parse_config("").value().describe(), "latest 1");
  EXPECT_EQ(parse_config("# c\n version_policy: latest 3 # newest\n").value().describe(),
            "latest 3");
  EXPECT_EQ(parse_config("version_policy: all").value().describe(), "all");
  EXPECT_EQ(parse_config("version_policy: specific 1 3").value().describe(), "specific 1 3");
  for (const char* bad : {"version_policy: latest 0", "version_policy: latest", "policy: all",
                          "version_policy: specific", "version_policy: specific 01",
                          "version_policy: all 2", "version_policy: newest 1"}) {
    EXPECT_FALSE(parse_config(bad)) << bad;
  }
}

TEST(RepositoryScan, NamesStayInsideTheFolder) {
  for (const char* ok : {"plus", "resnet-50", "a.b_c", "V2"}) EXPECT_TRUE(valid_model_name(ok));
  for (const char* bad : {"", ".", "..", ".hidden", "a/b", "a\\b", "%2E", "a b", "a@1", "a::b"}) {
    EXPECT_FALSE(valid_model_name(bad)) << bad;
  }
  EXPECT_FALSE(valid_model_name(std::string(129, 'a')));
}

TEST(RepositoryScan, CandidatesAreNewestFirst) {
  ModelFolder f;
  for (const std::uint64_t v : {1, 2, 5}) f.versions.push_back({v, {}, "", ""});
  auto versions = [](const bridge::models::Candidates& c) {
    std::vector<std::uint64_t> out;
    for (const auto* v : c.versions) out.push_back(v->version);
    return out;
  };
  auto c = candidate_versions(f);
  EXPECT_EQ(versions(c), (std::vector<std::uint64_t>{5, 2, 1}));
  EXPECT_EQ(c.wanted, 1u) << "latest 1: the newest that loads";
  f.policy = VersionPolicy{VersionPolicy::Kind::kSpecific, 0, {1, 5, 9}};
  c = candidate_versions(f);
  EXPECT_EQ(versions(c), (std::vector<std::uint64_t>{5, 1}));
  EXPECT_EQ(c.wanted, 2u);
}

}  // namespace
}  // namespace tb::test
