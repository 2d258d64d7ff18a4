// Which route a request takes (routes.hpp), without sockets; the admin and request-policy tests
// drive the same routes on a running host.
#include <gtest/gtest.h>

#include "transport/routes.hpp"

namespace tb::bridge {
namespace {

namespace http = boost::beast::http;

TEST(RouteOf, WebsocketsOnlyWithAnUpgradeAndTheQueryIgnored) {
  EXPECT_EQ(route_of(http::verb::get, "/session", true).kind, RouteKind::kSession);
  EXPECT_EQ(route_of(http::verb::get, "/session?x=1", true).kind, RouteKind::kSession);
  EXPECT_EQ(route_of(http::verb::get, "/data", true).kind, RouteKind::kData);
  EXPECT_EQ(route_of(http::verb::get, "/session", false).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::get, "/data", false).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::get, "/session/", true).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::get, "/session/../session", true).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::get, "//session", true).kind, RouteKind::kNotFound);
  // An upgrade elsewhere goes where the same request without one goes.
  EXPECT_EQ(route_of(http::verb::get, "/healthz", true).kind, RouteKind::kHealthz);
}

TEST(RouteOf, HealthAndMetricsOnlyByGet) {
  EXPECT_EQ(route_of(http::verb::get, "/healthz", false).kind, RouteKind::kHealthz);
  EXPECT_EQ(route_of(http::verb::get, "/metrics?now", false).kind, RouteKind::kMetrics);
  EXPECT_EQ(route_of(http::verb::post, "/healthz", false).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::head, "/metrics", false).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::get, "/metrics/", false).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::get, "", false).kind, RouteKind::kNotFound);
  EXPECT_EQ(route_of(http::verb::get, "?/healthz", false).kind, RouteKind::kNotFound);
}

TEST(RouteOf, ModelRoutesNameTheirModelAndTheirMethod) {
  const Route list = route_of(http::verb::get, "/v1/models", false);
  EXPECT_EQ(list.kind, RouteKind::kModelList);
  EXPECT_TRUE(list.method_ok);
  EXPECT_FALSE(route_of(http::verb::post, "/v1/models", false).method_ok);
  const Route load = route_of(http::verb::post, "/v1/models/plus/load?x", false);
  EXPECT_EQ(load.kind, RouteKind::kModelAction);
  EXPECT_TRUE(load.method_ok);
  EXPECT_EQ(load.model, "plus");
  EXPECT_EQ(load.action, "load");
  const Route unload = route_of(http::verb::get, "/v1/models/plus/unload", false);
  EXPECT_EQ(unload.kind, RouteKind::kModelAction);
  EXPECT_FALSE(unload.method_ok);
  EXPECT_EQ(unload.action, "unload");
  // NAME is everything before the last slash, as sent: the control refuses what is no name.
  const Route dotted = route_of(http::verb::post, "/v1/models/../../etc/load", false);
  EXPECT_EQ(dotted.kind, RouteKind::kModelAction);
  EXPECT_EQ(dotted.model, "../../etc");
  EXPECT_EQ(route_of(http::verb::post, "/v1/models//load", false).model, "");
  for (const char* other : {"/v1/models/", "/v1/models/plus", "/v1/models/plus/reload",
                            "/v1/models/plus/load/", "/v1/models/load"}) {
    EXPECT_EQ(route_of(http::verb::post, other, false).kind, RouteKind::kModelOther) << other;
  }
  EXPECT_EQ(route_of(http::verb::get, "/v1/modelsx", false).kind, RouteKind::kNotFound);
}

TEST(HeadersOf, TakesOriginAndHostWhenPresent) {
  http::request<http::string_body> req{http::verb::get, "/", 11};
  EXPECT_FALSE(headers_of(req).origin);
  EXPECT_FALSE(headers_of(req).host);
  req.set(http::field::host, "localhost:3000");
  req.set(http::field::origin, "");
  const RequestHeaders h = headers_of(req);
  EXPECT_EQ(h.host, std::optional<std::string_view>("localhost:3000"));
  EXPECT_EQ(h.origin, std::optional<std::string_view>(""));
}

}  // namespace
}  // namespace tb::bridge
