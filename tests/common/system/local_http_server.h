// Test helper: a cpp-httplib server on 127.0.0.1 at a port the kernel picks, plain HTTP or HTTPS
// with the self-signed certificate in tests/testdata/tls. Register handlers on server(), then
// Start(); the destructor stops it and joins its thread.
#ifndef HANDOFF_TESTS_COMMON_SYSTEM_LOCAL_HTTP_SERVER_H_
#define HANDOFF_TESTS_COMMON_SYSTEM_LOCAL_HTTP_SERVER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "httplib.h"

namespace handoff::testing {

class LocalHttpServer {
 public:
  enum class Scheme { kHttp, kHttps };

  explicit LocalHttpServer(Scheme scheme) : scheme_(scheme) {
    if (scheme == Scheme::kHttps) {
      const std::string dir = std::string(HANDOFF_TESTDATA_DIR) + "/tls/";
      auto tls = std::make_unique<httplib::SSLServer>((dir + "server.crt").c_str(),
                                                      (dir + "server.key").c_str());
      EXPECT_TRUE(tls->is_valid()) << "cannot load " << dir << "server.crt/server.key";
      server_ = std::move(tls);
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
  }

  ~LocalHttpServer() { Stop(); }
  LocalHttpServer(const LocalHttpServer&) = delete;
  LocalHttpServer& operator=(const LocalHttpServer&) = delete;

  httplib::Server& server() { return *server_; }

  // Binds 127.0.0.1:0 and serves on a thread. The socket listens once bind_to_any_port returns,
  // so a client may connect at once: the kernel queues the connection until the thread accepts.
  void Start() {
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0) << "cannot bind 127.0.0.1:0";
    thread_ = std::thread([this] {
      server_->listen_after_bind();
      serving_done_ = true;
    });
  }

  void Stop() {
    if (!thread_.joinable()) return;
    // httplib 0.11 (Debian 12) has no wait_until_ready(), and stop() does nothing until the
    // thread has entered its accept loop (is_running()); that happens right after the thread
    // starts, without waiting on anything, so yielding until then is short and bounded.
    while (!server_->is_running() && !serving_done_) std::this_thread::yield();
    server_->stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string scheme() const { return scheme_ == Scheme::kHttps ? "https" : "http"; }

 private:
  Scheme scheme_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> serving_done_{false};
  int port_ = 0;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COMMON_SYSTEM_LOCAL_HTTP_SERVER_H_
