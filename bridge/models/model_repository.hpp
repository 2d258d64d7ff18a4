// A model repository served while the host runs (`serve --model-repository DIR`): each model's
// versions (repository_scan.hpp) loaded on every served device and registered as custom ops,
//
//   NAME@VERSION            each served version
//   NAME                    the newest served version
//   NAME[@VERSION]::...     their training contracts (torchscript.hpp)
//
// and changed without a restart, by polling the folder or on admin requests (ModelControl).
//
// What a call sees (docs/models.md): a version becomes visible only once it has loaded on every
// device and passed its checks, and all of a model's ids change in one registry step. A call holds
// the version it found until it returns; the version's weights are freed (and uncharged) when its
// last call ends. A version that fails is reported and never replaces a working one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "repository_scan.hpp"
#include "torchbridge/bridge/models.hpp"
#include "torchbridge/libtorch/libtorch.hpp"
#include "torchbridge/libtorch/models.hpp"

namespace tb::bridge::models {

enum class Control {
  kNone,      // what the repository holds at start-up, for the host's life
  kPoll,      // rescanned every poll_interval: new and changed versions load, removed ones go
  kExplicit,  // changed only by POST /v1/models/NAME/{load,unload}
};

struct RepositoryOptions {
  std::filesystem::path root;
  Control control = Control::kNone;
  std::chrono::milliseconds poll_interval{5000};
  std::vector<std::string> devices;   // every version loads on each ("cpu", "cuda:0")
  std::vector<std::string> reserved;  // names served by --model: the repository may not take them
};

class ModelRepository final : public ModelControl {
 public:
  ModelRepository(RepositoryOptions options,
                  std::shared_ptr<backend::libtorch::CustomOpRegistry> registry);
  ~ModelRepository() override;
  ModelRepository(const ModelRepository&) = delete;
  ModelRepository& operator=(const ModelRepository&) = delete;

  // Loads every model the folder holds (start-up, before the host serves); one line per served
  // version and per failure, for the start-up text.
  std::string load_all();
  // The control thread: polls (kPoll) and answers requests. stop() answers what is queued with
  // 503 and joins it; the served versions stay registered.
  void start();
  void stop();

  // ModelControl.
  void request(Action action, const std::string& name, std::function<void(Answer)> done) override;
  std::string list_json() const override;
  std::string metrics_text() const override;
  ModelLedger& ledger() override { return *ledger_; }

  // One model's current state as list_json shows it (tests, and the routes' answers).
  std::string model_json(const std::string& name) const;

 private:
  // A loaded version, shared by the handlers registered for it: the last call (or registry entry)
  // to let go frees its weights and gives back their charge.
  struct Served {
    std::uint64_t version = 0;
    std::string file;
    backend::libtorch::LoadedModel model;
    double load_ms = 0;
    std::shared_ptr<ModelLedger> ledger;
    std::vector<std::string> charged;  // devices its weights are charged on

    ~Served() {
      for (const auto& device : charged) ledger->release(device, model.weight_bytes);
    }
  };
  struct VersionState {
    std::shared_ptr<Served> served;  // null: not served
    std::string stamp;               // of the file `served` or `error` came from
    std::string error;               // the last attempt's failure
  };
  struct ModelState {
    std::map<std::uint64_t, VersionState> versions;
    std::vector<std::string> ids;  // registered now
    // Registered before and not now: each step gives them its reason, so that a later call's
    // error says what happened last (unloaded, left the repository). Bounded by the ids the
    // model's versions ever had.
    std::set<std::string> retired;
    std::uint64_t loads = 0, failures = 0;
  };
  struct Pending {
    Action action;
    std::string name;
    std::function<void(Answer)> done;
  };

  // Brings model `name` to what its folder and policy say (a retry of failed versions when
  // `retry`): loads, checks, charges, then one registry step. The answer for a request.
  Answer sync(const std::string& name, bool retry);
  Answer unload(const std::string& name);
  // Loads one version; an error names the version and the cause.
  Result<std::shared_ptr<Served>> load_version(const std::string& name, const VersionFolder& v,
                                               const std::string* contract);
  // `state` after an attempt at version `v`'s file (logged when it loads).
  VersionState try_version(const std::string& name, const VersionFolder& v, VersionState state,
                           const std::string& contract);
  // Registers what `model` serves now, replacing what it served, in one step.
  void commit(const std::string& name, ModelState& model, const std::string& why);
  std::string model_json_locked(const std::string& name, const ModelState& model) const;
  void run();
  void poll();

  const RepositoryOptions options_;
  const std::shared_ptr<backend::libtorch::CustomOpRegistry> registry_;
  const std::shared_ptr<ModelLedger> ledger_ = std::make_shared<ModelLedger>();

  // Models are changed on the control thread (or load_all before it starts) and read by the
  // routes under this mutex.
  mutable std::mutex mutex_;
  std::map<std::string, ModelState> models_;
  std::deque<Pending> queue_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// "none", "poll", "explicit".
Result<Control> parse_control(const std::string& text);

}  // namespace tb::bridge::models
