// Accepts connections and hands each to the HTTP router, within Limits::max_connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include <boost/asio.hpp>

#include "host_counters.hpp"
#include "net/io_pool.hpp"
#include "torchbridge/result.hpp"

namespace tb::bridge {

struct HostState;

// "address:port" of a connected socket, for log lines.
std::string peer_of(const boost::asio::ip::tcp::socket& socket);
// Its address alone (part of a session's transfer scope).
std::string address_of(const boost::asio::ip::tcp::socket& socket);
// Compares without an early exit, so timing does not reveal a token's prefix.
bool constant_time_equal(std::string_view a, std::string_view b);

class Listener {
 public:
  // The acceptor lives on the first network thread (its handlers and close() never run at once:
  // an accept completing while another thread closed the acceptor handed out closed sockets, in a
  // loop). Each connection it accepts moves to the thread with the fewest.
  Listener(HostState& host, tb::net::IoPool& pool)
      : host_(host), pool_(pool), acceptor_(pool.context(0)) {}
  Status listen(const std::string& address, std::uint16_t port);
  void accept();
  void close();  // from any thread
  std::uint16_t port() const;

 private:
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

  HostState& host_;
  tb::net::IoPool& pool_;
  boost::asio::ip::tcp::acceptor acceptor_;
  // IPv4 or IPv6, as listened on: what an accepted socket is reopened with on its thread.
  boost::asio::ip::tcp protocol_ = boost::asio::ip::tcp::v4();
};

}  // namespace tb::bridge
