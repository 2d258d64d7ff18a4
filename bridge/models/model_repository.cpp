// ModelRepository: loading, checking and swapping versions. The control thread and the routes'
// JSON are in repository_control.cpp.
#include "model_repository.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tb::bridge::models {

namespace lt = tb::backend::libtorch;

ModelRepository::ModelRepository(RepositoryOptions options,
                                 std::shared_ptr<lt::CustomOpRegistry> registry)
    : options_(std::move(options)), registry_(std::move(registry)) {}

ModelRepository::~ModelRepository() {
  stop();
}

Result<std::shared_ptr<ModelRepository::Served>> ModelRepository::load_version(
    const std::string& name, const VersionFolder& v, const std::string* contract) {
  const std::string id = fmt::format("{}@{}", name, v.version);
  if (!v.error.empty()) return make_error(ErrorCode::kInvalidArgument, "{}", v.error);
  const auto start = std::chrono::steady_clock::now();
  auto model = lt::load_model(id, v.file.string(), options_.devices);
  if (!model) return model.error();
  if (contract && model.value().summary.schema != *contract) {
    return make_error(ErrorCode::kInvalidArgument,
                      "its signature `{}` differs from the served version's `{}`: a new version "
                      "keeps its model's signature (unload the model, or serve it under a new "
                      "name, to change it)",
                      model.value().summary.schema, *contract);
  }
  auto served = std::make_shared<Served>();
  served->version = v.version;
  served->file = v.file.string();
  served->model = std::move(model).value();
  served->ledger = ledger_;
  for (const auto& device : options_.devices) {
    // A version charged on some devices and refused on one is freed whole (the destructor gives
    // back what was charged).
    TB_TRY(ledger_->charge(device, served->model.weight_bytes));
    served->charged.push_back(device);
  }
  served->load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return served;
}

ModelRepository::VersionState ModelRepository::try_version(const std::string& name,
                                                           const VersionFolder& v,
                                                           VersionState state,
                                                           const std::string& contract) {
  auto loaded = load_version(name, v, contract.empty() ? nullptr : &contract);
  state.stamp = v.stamp;
  if (!loaded) {
    // What served before (an older file of this version) goes on serving.
    state.error = loaded.error().what();
    return state;
  }
  state.served = std::move(loaded).value();
  state.error.clear();
  const auto& s = *state.served;
  spdlog::info("model {} version {} loaded in {:.1f} ms ({}, {} bytes per device): {}", name,
               v.version, s.load_ms, s.model.summary.format, s.model.weight_bytes,
               s.model.summary.schema);
  return state;
}

void ModelRepository::commit(const std::string& name, ModelState& model, const std::string& why) {
  std::vector<std::pair<std::string, lt::CustomOpHandler>> add;
  auto serve_as = [&](const std::string& prefix, const std::shared_ptr<Served>& s) {
    add.emplace_back(prefix, [s](const lt::CustomOpCall& call) { return s->model.forward(call); });
    const std::string own = fmt::format("{}@{}", name, s->version);
    for (std::size_t i = 0; i < s->model.training.size(); ++i) {
      // The training ids were made for NAME@VERSION: NAME@VERSION::parameters, ...
      const std::string suffix = s->model.training[i].first.substr(own.size());
      add.emplace_back(prefix + suffix, [s, i](const lt::CustomOpCall& call) {
        return s->model.training[i].second(call);
      });
    }
  };
  std::shared_ptr<Served> newest;
  for (const auto& [version, state] : model.versions) {
    if (!state.served) continue;
    serve_as(fmt::format("{}@{}", name, version), state.served);
    newest = state.served;
  }
  if (newest) serve_as(name, newest);
  std::vector<std::string> ids;
  for (const auto& [id, handler] : add) ids.push_back(id);
  model.retired.insert(model.ids.begin(), model.ids.end());
  for (const auto& id : ids) model.retired.erase(id);
  std::vector<std::string> remove(model.ids);
  remove.insert(remove.end(), model.retired.begin(), model.retired.end());
  registry_->replace(remove, std::move(add), why);
  model.ids = std::move(ids);
}

ModelControl::Answer ModelRepository::sync(const std::string& name, bool retry) {
  auto folder = scan_model(options_.root, name);
  const bool known = models_.count(name) != 0;  // only this thread changes models_
  if (!folder && folder.error().code == ErrorCode::kNotFound && known) {
    // Its folder is gone: the model goes with it.
    std::lock_guard lock(mutex_);
    ModelState& model = models_[name];
    model.versions.clear();
    commit(name, model,
           fmt::format("model \"{}\" was unloaded: its folder left the repository", name));
    models_.erase(name);
    spdlog::info("model {}: its folder left the repository; unloaded", name);
    return Answer{404, folder.error().what() + std::string("\n")};
  }
  if (!folder) {
    return Answer{folder.error().code == ErrorCode::kNotFound ? 404u : 400u,
                  folder.error().what() + std::string("\n")};
  }
  if (std::find(options_.reserved.begin(), options_.reserved.end(), name) !=
      options_.reserved.end()) {
    return Answer{409, fmt::format("model \"{}\" is served by --model; the repository's folder "
                                   "of that name is ignored\n",
                                   name)};
  }
  const ModelState current = known ? models_.at(name) : ModelState{};
  // The signature callers rely on: the newest served version's.
  std::string contract;
  for (const auto& [version, state] : current.versions) {
    if (state.served) contract = state.served->model.summary.schema;
  }
  std::map<std::uint64_t, VersionState> next;
  std::uint64_t loads = 0, failures = 0;
  std::size_t ready = 0;
  const Candidates candidates = candidate_versions(folder.value());
  for (const VersionFolder* v : candidates.versions) {
    if (ready == candidates.wanted) break;
    const auto it = current.versions.find(v->version);
    VersionState state = it == current.versions.end() ? VersionState{} : it->second;
    // Settled: this file is served, or failed and not asked again.
    const bool same_file = !v->stamp.empty() && state.stamp == v->stamp;
    if (!(same_file && (state.served || !retry))) {
      const bool was_served = state.served != nullptr;
      state = try_version(name, *v, std::move(state), contract);
      (state.error.empty() ? loads : failures) += 1;
      if (contract.empty() && state.served) contract = state.served->model.summary.schema;
      if (!state.error.empty()) {
        spdlog::error("model {} version {} refused{}: {}", name, v->version,
                      was_served ? " (the version loaded before keeps serving)" : "", state.error);
      }
    }
    ready += state.served ? 1 : 0;
    next.emplace(v->version, std::move(state));
  }
  const bool all_ready =
      std::all_of(next.begin(), next.end(), [](const auto& e) { return e.second.error.empty(); });
  std::lock_guard lock(mutex_);
  ModelState& model = models_[name];
  model.versions = std::move(next);
  model.loads += loads;
  model.failures += failures;
  commit(name, model,
         fmt::format("version not served by model \"{}\" (its policy: {})", name,
                     folder.value().policy.describe()));
  return Answer{all_ready ? 200u : 422u, model_json_locked(name, model)};
}

ModelControl::Answer ModelRepository::unload(const std::string& name) {
  if (!valid_model_name(name)) {
    return Answer{400, fmt::format("\"{}\" is not a model name\n", name.substr(0, 128))};
  }
  std::lock_guard lock(mutex_);
  const auto it = models_.find(name);
  if (it == models_.end()) {
    return Answer{404, fmt::format("no model \"{}\" is loaded\n", name)};
  }
  for (auto& [version, state] : it->second.versions) state = VersionState{};
  commit(name, it->second,
         fmt::format("model \"{}\" was unloaded from this host (POST /v1/models/{}/load serves it "
                     "again)",
                     name, name));
  spdlog::info("model {} unloaded", name);
  return Answer{200, model_json_locked(name, it->second)};
}

std::string ModelRepository::load_all() {
  std::string lines;
  for (const auto& name : model_names(options_.root)) {
    (void)sync(name, /*retry=*/true);
    std::lock_guard lock(mutex_);
    const auto it = models_.find(name);
    if (it == models_.end()) continue;
    for (const auto& [version, state] : it->second.versions) {
      lines +=
          state.served
              ? fmt::format("Model {}@{}: {} ({}, {} bytes per device)\n", name, version,
                            state.served->model.summary.schema, state.served->model.summary.format,
                            state.served->model.weight_bytes)
              : fmt::format("Model {}@{} not served: {}\n", name, version, state.error);
    }
  }
  return lines;
}

}  // namespace tb::bridge::models
