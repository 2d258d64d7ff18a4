// The admin routes (/v1/models) on a running host: their own token, no path from the request, and
// model weights counted against the host's limits (issue 41).
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "backends/libtorch/test_modules.hpp"
#include "bridge/host_raw_client.hpp"
#include "model_repository.hpp"

namespace tb::test {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using ::testing::HasSubstr;

struct Reply {
  int status = 0;  // 0: nothing came back
  std::string body;
};

Reply request(std::uint16_t port, http::verb verb, const std::string& target,
              const std::string& authorization) {
  boost::asio::io_context ioc;
  boost::beast::tcp_stream stream(ioc);
  stream.expires_after(30s);
  boost::system::error_code ec;
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return {};
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  if (!authorization.empty()) req.set(http::field::authorization, authorization);
  req.prepare_payload();
  http::write(stream, req, ec);
  if (ec) return {};
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res, ec);
  if (ec && ec != http::error::end_of_stream) return {};
  return {static_cast<int>(res.result_int()), res.body()};
}

// A repository of `plus` versions (config `policy`) on a host whose admin token is "t0ken".
class AdminHost {
 public:
  explicit AdminHost(std::vector<std::pair<int, std::string>> versions, const std::string& policy,
                     bridge::HostOptions options = {}, bool token = true) {
    root_ = fs::temp_directory_path() / fmt::format("tb_admin_{}_{}", ::getpid(), counter()++);
    for (const auto& [version, module] : versions) {
      fs::create_directories(root_ / "plus" / std::to_string(version));
      fs::copy_file(test_module_path(module),
                    root_ / "plus" / std::to_string(version) / "model.pt");
    }
    std::ofstream(root_ / "plus" / "config.txt") << "version_policy: " << policy << "\n";
    bridge::models::RepositoryOptions o;
    o.root = root_;
    o.control = bridge::models::Control::kExplicit;
    o.devices = {"cpu"};
    repo_ = std::make_shared<bridge::models::ModelRepository>(
        o, std::make_shared<backend::libtorch::CustomOpRegistry>());
    options.models = repo_;
    if (token) options.admin_token = "t0ken";
    host_.emplace(options);
    startup_ = repo_->load_all();  // once the host counts the weights, as serve does
    repo_->start();
  }
  ~AdminHost() {
    repo_->stop();
    host_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Reply ask(http::verb verb, const std::string& target, const std::string& auth = "Bearer t0ken") {
    return request(host_->port(), verb, target, auth);
  }
  ConfiguredHost& host() { return *host_; }
  const std::string& startup() const { return startup_; }

 private:
  static std::atomic<int>& counter() {
    static std::atomic<int> n{0};
    return n;
  }
  fs::path root_;
  std::shared_ptr<bridge::models::ModelRepository> repo_;
  std::optional<ConfiguredHost> host_;
  std::string startup_;
};

TEST(AdminRoutes, NeedTheirOwnToken) {
  bridge::HostOptions o;
  o.auth_token = "session-token";
  AdminHost h({{1, "plus_one"}}, "latest 1", o);
  EXPECT_EQ(h.ask(http::verb::get, "/v1/models", "").status, 401);
  EXPECT_EQ(h.ask(http::verb::get, "/v1/models", "Bearer wrong").status, 401);
  EXPECT_EQ(h.ask(http::verb::get, "/v1/models", "Bearer session-token").status, 401)
      << "a client that may run ops may not change what the host serves";
  EXPECT_EQ(h.ask(http::verb::post, "/v1/models/plus/unload", "Bearer t0ke").status, 401);
  const Reply list = h.ask(http::verb::get, "/v1/models");
  EXPECT_EQ(list.status, 200);
  EXPECT_THAT(list.body, HasSubstr("\"name\":\"plus\",\"serving\":1"));
  EXPECT_EQ(h.ask(http::verb::post, "/v1/models").status, 405);
  EXPECT_EQ(h.ask(http::verb::get, "/v1/models/plus/load").status, 405);
  EXPECT_EQ(h.ask(http::verb::post, "/v1/models/plus/delete").status, 404);
  EXPECT_EQ(h.ask(http::verb::post, "/v1/models/plus/load").status, 200);
  EXPECT_EQ(h.host().metrics().requests_refused, 4u);
}

TEST(AdminRoutes, AreOffWithoutAToken) {
  AdminHost h({{1, "plus_one"}}, "latest 1", {}, /*token=*/false);
  EXPECT_EQ(h.ask(http::verb::get, "/v1/models").status, 404);
  EXPECT_EQ(h.ask(http::verb::post, "/v1/models/plus/unload").status, 404);
}

TEST(AdminRoutes, NoRequestNamesAPath) {
  AdminHost h({{1, "plus_one"}}, "latest 1");
  for (const char* target :
       {"/v1/models/../load", "/v1/models/%2E%2E/load", "/v1/models/..%2Fetc/load",
        "/v1/models//load", "/v1/models/a/b/load", "/v1/models/%2Ftmp%2Fx/load"}) {
    SCOPED_TRACE(target);
    const int status = h.ask(http::verb::post, target).status;
    EXPECT_TRUE(status == 400 || status == 404) << status;
  }
  EXPECT_THAT(h.ask(http::verb::get, "/v1/models").body, HasSubstr("\"serving\":1"));
}

TEST(AdminRoutes, ModelWeightsCountAgainstTheHostsLimit) {
  bridge::HostOptions o;
  o.limits.max_host_bytes = 100;  // one version's 64 bytes fit, two do not
  AdminHost h({{1, "plus_one"}, {2, "plus_two"}}, "all", o);
  EXPECT_THAT(h.startup(), HasSubstr("Model plus@2: forward")) << "the newest loads first";
  EXPECT_THAT(h.startup(), HasSubstr("Model plus@1 not served"));
  EXPECT_THAT(h.startup(), HasSubstr("--max-host-bytes"));
  const auto metrics = h.host().metrics();
  ASSERT_EQ(metrics.devices.size(), 1u);
  EXPECT_EQ(metrics.devices[0].tensor_bytes, 64u) << "the served version's weights";
  EXPECT_THAT(h.host().host().metrics_text(),
              HasSubstr("torchbridge_model_weight_bytes{device=\"cpu\"} 64"));
  // Unloaded, the weights leave the count.
  EXPECT_EQ(h.ask(http::verb::post, "/v1/models/plus/unload").status, 200);
  EXPECT_EQ(h.host().metrics().devices[0].tensor_bytes, 0u);
}

}  // namespace
}  // namespace tb::test
