// The admin routes: `GET /v1/models`, `POST /v1/models/NAME/load`, `POST /v1/models/NAME/unload`.
// They change what the host serves, so they take their own token (--admin-token-file), never the
// session token, and are off without one. The model control (HostOptions::models) checks NAME and
// loads only from its repository: nothing in the request is a path.
#include <boost/asio/post.hpp>

#include "host_state.hpp"
#include "transport/http_routes.hpp"
#include "transport/listener.hpp"

namespace tb::bridge {

namespace http = boost::beast::http;

namespace {

// The longest an admin request may take: a large model loads (and is checked on every device)
// before the answer.
constexpr auto kAdminTimeout = std::chrono::minutes(10);

}  // namespace

void HttpConnection::admin(const Request& req, const Route& route) {
  const HostOptions& options = host_.options;
  if (!options.models || !options.admin_token) {
    return respond(req, http::status::not_found, "text/plain",
                   "the admin routes are off: serve --model-repository DIR --admin-token-file "
                   "FILE turns them on\n");
  }
  if (!constant_time_equal(req[http::field::authorization], "Bearer " + *options.admin_token)) {
    host_.counters.add(Count::kRequestsRefused);
    return respond(req, http::status::unauthorized, "text/plain",
                   "the admin routes need `Authorization: Bearer TOKEN`, TOKEN the first line of "
                   "the host's --admin-token-file\n");
  }
  if (route.kind == RouteKind::kModelList) {
    if (!route.method_ok) {
      return respond(req, http::status::method_not_allowed, "text/plain", "GET /v1/models\n");
    }
    return respond(req, http::status::ok, "application/json", options.models->list_json());
  }
  // /v1/models/NAME/ACTION: NAME is passed on as sent, undecoded; the control refuses any name
  // outside its repository's alphabet.
  if (route.kind != RouteKind::kModelAction) {
    return respond(req, http::status::not_found, "text/plain",
                   "POST /v1/models/NAME/load or /v1/models/NAME/unload\n");
  }
  if (!route.method_ok) {
    return respond(req, http::status::method_not_allowed, "text/plain",
                   "POST /v1/models/NAME/" + route.action + "\n");
  }
  stream_.expires_after(kAdminTimeout);
  auto held = std::make_shared<Request>(req);
  options.models->request(
      route.action == "load" ? ModelControl::Action::kLoad : ModelControl::Action::kUnload,
      route.model, [self = shared_from_this(), held](ModelControl::Answer answer) {
        auto executor = self->stream_.get_executor();
        boost::asio::post(executor, [self, held, answer = std::move(answer)]() mutable {
          const bool json = !answer.body.empty() && answer.body.front() == '{';
          self->respond(*held, static_cast<http::status>(answer.status),
                        json ? "application/json" : "text/plain", std::move(answer.body));
        });
      });
}

}  // namespace tb::bridge
