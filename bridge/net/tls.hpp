// TLS contexts and checks shared by the host and the clients (OpenSSL through Asio). Header-only:
// the host library and the installed client library each compile it, so neither depends on a
// third library.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/ssl.h>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>

#include "any_stream.hpp"
#include "torchbridge/result.hpp"

namespace tb::net {

namespace ssl = boost::asio::ssl;

// TLS 1.2 and later only; no compression, no renegotiation.
inline void harden(ssl::context& ctx) {
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                  ssl::context::no_compression | ssl::context::single_dh_use);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
#ifdef SSL_OP_NO_RENEGOTIATION
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_NO_RENEGOTIATION);
#endif
}

// A server context from a PEM certificate chain and its PEM private key.
inline Result<std::shared_ptr<ssl::context>> server_context(const std::string& cert_file,
                                                            const std::string& key_file) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  harden(*ctx);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "TLS certificate {}: {}", cert_file,
                      ec.message());
  }
  ctx->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "TLS key {} (of certificate {}): {}", key_file,
                      cert_file, ec.message());
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return make_error(ErrorCode::kInvalidArgument, "TLS key {} does not match certificate {}",
                      key_file, cert_file);
  }
  return ctx;
}

// A client context that verifies the peer against `ca_file` (PEM), or, when empty, against the
// system's roots (OpenSSL's default paths; SSL_CERT_FILE and SSL_CERT_DIR are honoured).
inline Result<std::shared_ptr<ssl::context>> client_context(const std::string& ca_file) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  harden(*ctx);
  boost::system::error_code ec;
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
  } else {
    ctx->load_verify_file(ca_file, ec);
  }
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument, "TLS CA file {}: {}",
                      ca_file.empty() ? std::string("(system default)") : ca_file, ec.message());
  }
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

// Readies a client stream to verify `host` (a name or an IP literal, without brackets): SNI for
// names, and the certificate must name it.
inline Status prepare_client(AnyStream::Tls& tls, const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (ec && SSL_set_tlsext_host_name(tls.native_handle(), host.c_str()) != 1) {
    return make_error(ErrorCode::kInvalidArgument, "TLS: cannot send the server name {}", host);
  }
  tls.set_verify_callback(ssl::host_name_verification(host));
  return ok();
}

// `host` without the brackets of an IPv6 literal ("[::1]" is "::1"): they belong to the URL, not
// to the name a resolver or a certificate check takes.
inline std::string_view unbracketed(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// Whether `host` (a name or an IP literal, brackets allowed) is this machine: a credential sent
// there in the clear never crosses a network.
inline bool is_loopback(std::string_view host) {
  host = unbracketed(host);
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(host), ec);
  return !ec && address.is_loopback();
}

}  // namespace tb::net
