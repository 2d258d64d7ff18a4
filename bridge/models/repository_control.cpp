// ModelRepository's control thread (polls and admin requests, one at a time, so that two changes
// of one model never interleave) and what the routes and /metrics show.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "json_text.hpp"
#include "model_repository.hpp"

namespace tb::bridge::models {

namespace {

// Admin requests waiting for the control thread; beyond it a request is answered 503 at once.
constexpr std::size_t kMaxQueuedRequests = 16;

// Nothing throws out of the control thread: a file system error mid-scan (a directory iterator
// throws on increment) or an allocation failure answers 500 and the thread goes on.
template <class F>
ModelControl::Answer guarded_answer(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    spdlog::error("model repository: {}", e.what());
    return ModelControl::Answer{500, fmt::format("model repository: {}\n", e.what())};
  }
}

}  // namespace

Result<Control> parse_control(const std::string& text) {
  if (text == "none") return Control::kNone;
  if (text == "poll") return Control::kPoll;
  if (text == "explicit") return Control::kExplicit;
  return make_error(ErrorCode::kInvalidArgument,
                    "--model-control {}: expected none, poll or explicit", text);
}

void ModelRepository::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void ModelRepository::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::deque<Pending> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(queue_);
  }
  for (auto& p : left) p.done(Answer{503, "the host is stopping\n"});
}

void ModelRepository::request(Action action, const std::string& name,
                              std::function<void(Answer)> done) {
  if (options_.control != Control::kExplicit) {
    return done(Answer{409, fmt::format("this host's models follow its repository "
                                        "(--model-control {}): change the folder instead\n",
                                        options_.control == Control::kPoll ? "poll" : "none")});
  }
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && thread_.joinable() && queue_.size() < kMaxQueuedRequests) {
      queue_.push_back(Pending{action, name, std::move(done)});
      wake_.notify_one();
      return;
    }
  }
  done(Answer{503, "the model control is busy or stopping; ask again\n"});
}

void ModelRepository::run() {
  auto next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
  for (;;) {
    std::unique_lock lock(mutex_);
    auto ready = [&] { return stopping_ || !queue_.empty(); };
    if (options_.control == Control::kPoll) {
      wake_.wait_until(lock, next_poll, ready);
    } else {
      wake_.wait(lock, ready);
    }
    if (stopping_) return;
    if (!queue_.empty()) {
      Pending p = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      p.done(guarded_answer([&] {
        return p.action == Action::kLoad ? sync(p.name, /*retry=*/true) : unload(p.name);
      }));
      continue;
    }
    lock.unlock();
    (void)guarded_answer([&] {
      poll();
      return Answer{};
    });
    next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
  }
}

void ModelRepository::poll() {
  auto names = model_names(options_.root);
  for (const auto& [name, model] : models_) {  // read on the only thread that changes it
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  for (const auto& name : names) (void)sync(name, /*retry=*/false);
}

std::string ModelRepository::model_json_locked(const std::string& name,
                                               const ModelState& model) const {
  std::vector<std::string> versions;
  std::string serving = "null";
  for (const auto& [version, state] : model.versions) {
    std::string v = fmt::format("{{\"version\":{},\"state\":\"{}\"", version,
                                state.served          ? "ready"
                                : state.error.empty() ? "unloaded"
                                                      : "failed");
    if (const auto& s = state.served) {
      serving = std::to_string(version);
      v += fmt::format(
          ",\"format\":\"{}\",\"signature\":\"{}\",\"devices\":[\"{}\"],\"bytes\":{},"
          "\"load_ms\":{:.1f},\"file\":\"{}\"",
          s->model.summary.format, cli::json_escape(s->model.summary.schema),
          fmt::join(options_.devices, "\",\""), s->model.weight_bytes, s->load_ms,
          cli::json_escape(s->file));
    }
    if (!state.error.empty()) v += fmt::format(",\"error\":\"{}\"", cli::json_escape(state.error));
    versions.push_back(v + "}");
  }
  return fmt::format("{{\"name\":\"{}\",\"serving\":{},\"versions\":[{}]}}", cli::json_escape(name),
                     serving, fmt::join(versions, ","));
}

std::string ModelRepository::model_json(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = models_.find(name);
  return it == models_.end() ? std::string() : model_json_locked(name, it->second);
}

std::string ModelRepository::list_json() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> models;
  for (const auto& [name, model] : models_) models.push_back(model_json_locked(name, model));
  return fmt::format("{{\"repository\":\"{}\",\"control\":\"{}\",\"models\":[{}]}}\n",
                     cli::json_escape(options_.root.string()),
                     options_.control == Control::kPoll       ? "poll"
                     : options_.control == Control::kExplicit ? "explicit"
                                                              : "none",
                     fmt::join(models, ","));
}

std::string ModelRepository::metrics_text() const {
  std::string out =
      "# HELP torchbridge_model_loads_total Model versions loaded from the repository.\n"
      "# TYPE torchbridge_model_loads_total counter\n";
  std::string failures =
      "# HELP torchbridge_model_load_failures_total Model versions refused (load or check "
      "failed).\n# TYPE torchbridge_model_load_failures_total counter\n";
  std::string ready =
      "# HELP torchbridge_model_versions_ready Versions of a model being served.\n"
      "# TYPE torchbridge_model_versions_ready gauge\n";
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, model] : models_) {
      std::size_t n = 0;
      for (const auto& [version, state] : model.versions) n += state.served ? 1 : 0;
      out += fmt::format("torchbridge_model_loads_total{{model=\"{}\"}} {}\n", name, model.loads);
      failures += fmt::format("torchbridge_model_load_failures_total{{model=\"{}\"}} {}\n", name,
                              model.failures);
      ready += fmt::format("torchbridge_model_versions_ready{{model=\"{}\"}} {}\n", name, n);
    }
  }
  out += failures + ready +
         "# HELP torchbridge_model_weight_bytes Bytes of served models' weights on a device "
         "(counted with its tensors).\n# TYPE torchbridge_model_weight_bytes gauge\n";
  const auto held = ledger_->bytes();
  for (const auto& device : options_.devices) {
    const auto it = held.find(device);
    out += fmt::format("torchbridge_model_weight_bytes{{device=\"{}\"}} {}\n", device,
                       it == held.end() ? 0 : it->second);
  }
  return out;
}

}  // namespace tb::bridge::models
