// A stand-in daemon for tests: the core HTTP server on a loopback port the
// kernel picks, run on a thread of its own once the test has added its
// routes, and stopped and joined when it goes.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "clickatron/http_server.h"

namespace clickatron::testing {

class StandInServer {
 public:
  // `admin_token`: what AdminRoute()s accept ("" for none).
  explicit StandInServer(const std::string& daemon, const std::string& admin_token = "") {
    HttpServerOptions options;
    options.daemon = daemon;
    options.member = daemon + "-0";
    options.listen = HostPort{"127.0.0.1", 0};
    options.admin_token = admin_token;
    auto server = HttpServer::Create(options);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (server.ok()) server_ = std::move(server).value();
  }
  ~StandInServer() {
    if (!thread_.joinable()) return;
    server_->Stop();
    thread_.join();
  }
  StandInServer(const StandInServer&) = delete;
  StandInServer& operator=(const StandInServer&) = delete;

  // Add routes here, then Start().
  HttpServer& server() { return *server_; }
  void Start() {
    thread_ = std::thread([this] { (void)server_->Run(); });
  }
  uint16_t port() const { return server_->port(); }
  HostPort peer() const { return HostPort{"127.0.0.1", server_->port()}; }

 private:
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

}  // namespace clickatron::testing
