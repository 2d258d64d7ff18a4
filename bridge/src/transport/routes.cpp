#include "transport/routes.hpp"

namespace tb::bridge {

namespace http = boost::beast::http;

Route route_of(http::verb method, std::string_view target, bool is_upgrade) {
  const std::string_view path = target.substr(0, target.find('?'));
  Route route;
  if (is_upgrade && path == "/session") {
    route.kind = RouteKind::kSession;
  } else if (is_upgrade && path == "/data") {
    route.kind = RouteKind::kData;
  } else if (method == http::verb::get && path == "/healthz") {
    route.kind = RouteKind::kHealthz;
  } else if (method == http::verb::get && path == "/metrics") {
    route.kind = RouteKind::kMetrics;
  } else if (path == "/v1/models") {
    route.kind = RouteKind::kModelList;
    route.method_ok = method == http::verb::get;
  } else if (constexpr std::string_view kModels = "/v1/models/"; path.rfind(kModels, 0) == 0) {
    // NAME is everything up to the last slash: the control refuses any name with one.
    const std::string_view rest = path.substr(kModels.size());
    const auto slash = rest.rfind('/');
    const std::string_view action =
        slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
    if (action != "load" && action != "unload") {
      route.kind = RouteKind::kModelOther;
    } else {
      route.kind = RouteKind::kModelAction;
      route.method_ok = method == http::verb::post;
      route.model = std::string(rest.substr(0, slash));
      route.action = std::string(action);
    }
  }
  return route;
}

RequestHeaders headers_of(const http::request<http::string_body>& request) {
  RequestHeaders h;
  if (const auto it = request.find(http::field::origin); it != request.end())
    h.origin = it->value();
  if (const auto it = request.find(http::field::host); it != request.end()) h.host = it->value();
  return h;
}

}  // namespace tb::bridge
