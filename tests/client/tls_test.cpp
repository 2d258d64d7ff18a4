// TLS end to end (issue 16, finding 16): a host started with a certificate serves every route over
// TLS; the client connects with wss:// and a CA file, verifies the host's name, and moves tensors
// between two TLS hosts; plain and untrusted peers fail their handshake with a clear error while
// the host goes on serving. Certificates come from scripts/make-test-certs at run time.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "client/host_util.hpp"
#include "client/program.hpp"
#include "torchbridge/client/tensor.hpp"

namespace tb::test {
namespace {

namespace fs = std::filesystem;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;
using client::Device;
using client::Tensor;

class ClientTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("tb-tls-test-" + std::to_string(::getpid())));
    const std::string cmd = std::string(TB_MAKE_TEST_CERTS) + " '" + dir_->string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  static std::string file(const char* name) { return (*dir_ / name).string(); }

  static bridge::HostOptions tls_options(const char* cert = "host") {
    bridge::HostOptions o;
    o.tls_cert_file = file((std::string(cert) + ".pem").c_str());
    o.tls_key_file = file((std::string(cert) + ".key").c_str());
    o.tls_ca_file = file("ca.pem");  // for downloads from other TLS hosts
    return o;
  }
  static client::SessionOptions trusting(const char* ca = "ca.pem") {
    client::SessionOptions o;
    o.tls_ca_file = file(ca);
    o.connect_timeout = 5s;
    return o;
  }
  static Device connect(const std::string& address, client::SessionOptions options,
                        std::uint32_t index = 0) {
    auto d = Device::connect(address, index, std::move(options));
    EXPECT_TRUE(d) << (d ? "" : d.error().what());
    return d ? d.value() : Device();
  }
  static void expect_serves(const ClientTestHost& host) {
    auto dev = connect(host.address(), trusting());
    ASSERT_TRUE(dev.valid());
    auto x = Tensor::from_vector<float>(dev, {1, 2, 3});
    EXPECT_EQ((x * 2.0).to_vector<float>(10s).value(), (std::vector<float>{2, 4, 6}));
  }

  static fs::path* dir_;
};
fs::path* ClientTls::dir_ = nullptr;

// GET `target` over https, trusting `ca`, with `origin` as its Origin header when given: the
// status and body, or the error.
std::string https_get(std::uint16_t port, const std::string& target, const std::string& ca,
                      const std::string& origin = "") {
  net::io_context ioc;
  net::ssl::context ctx(net::ssl::context::tls_client);
  ctx.load_verify_file(ca);
  ctx.set_verify_mode(net::ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> s(ioc, ctx);
  s.set_verify_callback(net::ssl::host_name_verification("127.0.0.1"));
  beast::get_lowest_layer(s).expires_after(10s);
  try {
    beast::get_lowest_layer(s).connect(
        net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    s.handshake(net::ssl::stream_base::client);
    http::request<http::string_body> req(http::verb::get, target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!origin.empty()) {
      req.set(http::field::origin, origin);
      if (target == "/session" || target == "/data") {  // a websocket upgrade, as a page sends it
        req.set(http::field::connection, "Upgrade");
        req.set(http::field::upgrade, "websocket");
        req.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
        req.set(http::field::sec_websocket_version, "13");
      }
    }
    http::write(s, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(s, buffer, res);
    return std::to_string(res.result_int()) + " " + res.body();
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

TEST_F(ClientTls, TheProgramRunsOverWssOnTwoDevices) {
  ClientTestHost host(2, tls_options());
  ASSERT_EQ(host.address().rfind("wss://", 0), 0u);
  auto dev = connect(host.address(), trusting());
  auto other = connect(host.address(), trusting(), 1);
  ASSERT_TRUE(dev.valid() && other.valid());
  EXPECT_EQ(dev.address().rfind("wss://", 0), 0u);
  for (const auto& c : run_program(dev, other)) {
    ASSERT_TRUE(c.values) << c.name << ": " << c.values.error().what();
    EXPECT_EQ(mismatch(c.values.value(), c.expected, c.tolerance), "") << c.name;
  }
  EXPECT_TRUE(dev.sync());
  EXPECT_EQ(host.host().metrics().tls_handshakes_failed, 0u);
}

TEST_F(ClientTls, HealthAndMetricsAreServedOverHttps) {
  ClientTestHost host(1, tls_options());
  EXPECT_EQ(https_get(host.host().port(), "/healthz", file("ca.pem")), "200 ok\n");
  const auto metrics = https_get(host.host().port(), "/metrics", file("ca.pem"));
  EXPECT_EQ(metrics.rfind("200 ", 0), 0u) << metrics;
  EXPECT_NE(metrics.find("torchbridge_tls_handshakes_failed_total 0"), std::string::npos);
  EXPECT_EQ(https_get(host.host().port(), "/nowhere", file("ca.pem")).rfind("404 ", 0), 0u);
  // Stopping accepts nothing more. Before the listener's strand, an accept racing the close
  // handed out closed sockets in a loop (each a failed TLS handshake here) about one run in three.
  host.host().stop();
  EXPECT_EQ(host.host().metrics().tls_handshakes_failed, 0u);
}

// Issue 39, finding 1, over wss:// and https://: a web page's Origin is refused on every route.
TEST_F(ClientTls, AWebPagesOriginIsRefusedOverTlsToo) {
  ClientTestHost host(1, tls_options());
  for (const char* route : {"/session", "/data", "/healthz", "/metrics"}) {
    const auto r = https_get(host.host().port(), route, file("ca.pem"), "https://evil.example");
    EXPECT_EQ(r.rfind("403 ", 0), 0u) << route << ": " << r;
  }
  expect_serves(host);
}

TEST_F(ClientTls, AnUntrustedCertificateIsAClearErrorAndTheHostGoesOn) {
  ClientTestHost host(1, tls_options());
  auto d = Device::connect(host.address(), 0, trusting("other-ca.pem"));
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().what().find("TLS handshake failed"), std::string::npos) << d.error().what();
  EXPECT_NE(d.error().what().find("certificate verify failed"), std::string::npos)
      << d.error().what();
  EXPECT_EQ(https_get(host.host().port(), "/healthz", file("other-ca.pem")).rfind("error: ", 0),
            0u);
  expect_serves(host);
  EXPECT_GE(host.host().metrics().tls_handshakes_failed, 2u);
}

TEST_F(ClientTls, ACertificateForAnotherNameIsRefused) {
  ClientTestHost host(1, tls_options("wrong"));  // signed by the trusted CA, for another name
  auto d = Device::connect(host.address(), 0, trusting());
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().what().find("certificate verify failed"), std::string::npos)
      << d.error().what();
}

TEST_F(ClientTls, PlainAndTlsPeersOfTheWrongKindFailCleanly) {
  ClientTestHost tls_host(1, tls_options());
  ClientTestHost plain_host(1);
  // A plain client's HTTP upgrade is no TLS ClientHello: the handshake fails, the socket closes.
  const std::string plain_address = "ws://127.0.0.1:" + std::to_string(tls_host.host().port());
  auto plain = Device::connect(plain_address, 0, trusting());
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().what().find("websocket upgrade on /session failed"), std::string::npos)
      << plain.error().what();
  // A TLS client on a plain host gets an HTTP answer where the ServerHello should be.
  const std::string tls_address = "wss://127.0.0.1:" + std::to_string(plain_host.host().port());
  auto tls = Device::connect(tls_address, 0, trusting());
  ASSERT_FALSE(tls);
  EXPECT_NE(tls.error().what().find("TLS handshake failed"), std::string::npos)
      << tls.error().what();
  EXPECT_EQ(tls_host.host().metrics().tls_handshakes_failed, 1u);
  expect_serves(tls_host);
}

TEST_F(ClientTls, TensorsMoveBetweenTwoTlsHosts) {
  ClientTestHost near(1, tls_options()), far(1, tls_options());
  auto a = connect(near.address(), trusting());
  auto b = connect(far.address(), trusting());
  ASSERT_TRUE(a.valid() && b.valid());
  auto x = Tensor::from_vector<float>(a, {1.5f, -2, 4}, {3});
  auto moved = x.to(b);
  EXPECT_EQ(moved.device(), b);
  EXPECT_EQ((moved * 2.0).to_vector<float>(20s).value(), (std::vector<float>{3, -4, 8}));
  auto i = Tensor::from_vector<std::int64_t>(b, {7, -9});
  EXPECT_EQ(i.to(a).to_vector<std::int64_t>(20s).value(), (std::vector<std::int64_t>{7, -9}));
  EXPECT_TRUE(a.sync());
  EXPECT_TRUE(b.sync());
}

TEST_F(ClientTls, AHostThatDoesNotTrustItsPeerFailsTheTransferWithTheReason) {
  auto untrusting = tls_options();
  untrusting.tls_ca_file = file("other-ca.pem");
  ClientTestHost near(1, tls_options()), far(1, untrusting);
  auto a = connect(near.address(), trusting());
  auto b = connect(far.address(), trusting());
  auto moved = Tensor::from_vector<float>(a, {1, 2}).to(b).to_vector<float>(20s);
  ASSERT_FALSE(moved);
  EXPECT_NE(moved.error().what().find("certificate verify failed"), std::string::npos)
      << moved.error().what();
  expect_serves(far);
}

TEST_F(ClientTls, HostStartRefusesAKeyThatIsNotTheCertificates) {
  bridge::HostOptions o = tls_options();
  o.tls_key_file = file("wrong.key");
  bridge::Host host(o, {backend::libtorch::make_backend({"cpu"}).value()});
  auto started = host.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().what().find("key values mismatch"), std::string::npos)
      << started.error().what();
  o.tls_key_file.reset();
  bridge::Host half(o, {backend::libtorch::make_backend({"cpu"}).value()});
  EXPECT_FALSE(half.start());
}

TEST_F(ClientTls, ACredentialOverPlainWsToAnotherMachineWarns) {
  std::vector<std::string> warnings;
  auto options = trusting();
  options.credential = "secret";
  options.connect_timeout = 200ms;
  options.on_warning = [&](const std::string& w) { warnings.push_back(w); };
  // TEST-NET-1: never reached, the warning comes before the connection is tried.
  EXPECT_FALSE(Device::connect("ws://192.0.2.1:9", 0, options));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("plain ws://"), std::string::npos) << warnings[0];
  warnings.clear();
  EXPECT_FALSE(Device::connect("wss://192.0.2.1:9", 0, options));
  EXPECT_FALSE(Device::connect("ws://127.0.0.1:9", 0, options));
  EXPECT_FALSE(Device::connect("ws://localhost:9", 0, options));
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace tb::test
