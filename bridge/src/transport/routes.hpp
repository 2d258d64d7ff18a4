// Which route an HTTP request takes, decided from its method, target and upgrade flag alone, and
// the headers the request policy reads (request_policy.hpp). Pure functions: the connection
// (http_routes.cpp, admin_routes.cpp) acts on them, the unit tests and fuzz/http_fuzzer.cpp call
// them without sockets.
#pragma once

#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include "transport/request_policy.hpp"

namespace tb::bridge {

enum class RouteKind {
  kSession,      // a websocket upgrade on /session
  kData,         // a websocket upgrade on /data
  kHealthz,      // GET /healthz
  kMetrics,      // GET /metrics
  kModelList,    // /v1/models
  kModelAction,  // /v1/models/NAME/load or /v1/models/NAME/unload
  kModelOther,   // anything else under /v1/models/
  kNotFound,
};

struct Route {
  RouteKind kind = RouteKind::kNotFound;
  // kModelList and kModelAction: whether the request used the route's method (GET, POST). The
  // admin routes check their token first, so a wrong method is answered after that.
  bool method_ok = true;
  // kModelAction: NAME as sent, undecoded and unchecked (the model control checks it), and
  // "load" or "unload".
  std::string model;
  std::string action;
};

// The target's query (from '?') plays no part.
Route route_of(boost::beast::http::verb method, std::string_view target, bool is_upgrade);

// The `Origin` and `Host` headers of a request, as the request policy takes them.
RequestHeaders headers_of(
    const boost::beast::http::request<boost::beast::http::string_body>& request);

}  // namespace tb::bridge
