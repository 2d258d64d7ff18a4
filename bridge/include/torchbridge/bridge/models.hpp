// Served models as the host sees them: the admin routes (`/v1/models`) act through ModelControl,
// and model weights count against the host's memory limits through ModelLedger. tb_models
// implements the control on a model repository (bridge/models/model_repository.hpp); the host
// never sees how a model is loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "torchbridge/result.hpp"

namespace tb::bridge {

// Bytes of model weights on each device, charged against the host's limits. The host attaches
// how to count (and refuse) when it is made and detaches before it goes; what was charged before
// it attached is counted then, without refusal (the models were there first).
class ModelLedger {
 public:
  // Adds `bytes` on `device` (refusing past a limit when `check`), or removes them (negative).
  using Counter = std::function<Status(const std::string& device, std::int64_t bytes, bool check)>;

  void attach(Counter counter);
  void detach();
  // Refused (nothing charged) when the host's or the device's limit would be passed.
  Status charge(const std::string& device, std::uint64_t bytes);
  void release(const std::string& device, std::uint64_t bytes);
  std::map<std::string, std::uint64_t> bytes() const;

 private:
  mutable std::mutex mutex_;
  Counter counter_;
  std::map<std::string, std::uint64_t> held_;
};

class ModelControl {
 public:
  virtual ~ModelControl() = default;

  enum class Action { kLoad, kUnload };
  // What an admin request gets: an HTTP status and a JSON (or plain text) body.
  struct Answer {
    unsigned status = 200;
    std::string body;
  };
  // Runs `action` on model `name` away from the network threads; `done` is called once, from any
  // thread (also when the control stops before it runs).
  virtual void request(Action action, const std::string& name,
                       std::function<void(Answer)> done) = 0;
  // GET /v1/models: every model with its versions, states, devices and signatures (JSON).
  virtual std::string list_json() const = 0;
  // Prometheus lines for /metrics (loads, failures, versions by state, weight bytes).
  virtual std::string metrics_text() const = 0;
  virtual ModelLedger& ledger() = 0;
};

}  // namespace tb::bridge
