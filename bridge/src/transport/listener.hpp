// Accepts connections and hands each to the HTTP router, within Limits::max_connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include <boost/asio.hpp>

#include "host_counters.hpp"
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
  // The acceptor lives on a strand: its handlers and close() never run at once (an accept
  // completing while another thread closed the acceptor handed out closed sockets, in a loop).
  Listener(HostState& host, boost::asio::io_context& ioc)
      : host_(host), ioc_(ioc), acceptor_(boost::asio::make_strand(ioc)) {}
  Status listen(const std::string& address, std::uint16_t port);
  void accept();
  void close();  // from any thread
  std::uint16_t port() const;

 private:
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

  HostState& host_;
  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace tb::bridge
