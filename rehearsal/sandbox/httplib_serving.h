// Serving a cpp-httplib server on a thread of its own, for the sandbox's small HTTP servers (the
// fake instance metadata, the stand-ins' health endpoints). Header-only: each user already links
// cpp-httplib.
#ifndef HANDOFF_REHEARSAL_SANDBOX_HTTPLIB_SERVING_H_
#define HANDOFF_REHEARSAL_SANDBOX_HTTPLIB_SERVING_H_

#include <atomic>
#include <string>
#include <thread>

#include "httplib.h"

namespace handoff::sandbox {

// Binds `server` to host:port, port 0 taking any free one. The port bound, or -1.
inline int BindHttplib(httplib::Server& server, const std::string& host, int port) {
  if (port == 0) return server.bind_to_any_port(host);
  return server.bind_to_port(host, port) ? port : -1;
}

// Runs a bound server's accept loop on its own thread. Stop() (or the destructor) ends it; the
// server must outlive this. Start and Stop from one thread.
class HttplibServingThread {
 public:
  HttplibServingThread() = default;
  HttplibServingThread(const HttplibServingThread&) = delete;
  HttplibServingThread& operator=(const HttplibServingThread&) = delete;
  ~HttplibServingThread() { Stop(); }

  void Start(httplib::Server& server) {
    server_ = &server;
    thread_ = std::thread([this] {
      server_->listen_after_bind();
      done_ = true;
    });
  }

  // Returns once the accept loop has ended. Requests still being answered must not be waiting
  // on anything that only the caller releases: httplib's stop joins its workers.
  void Stop() {
    if (!thread_.joinable()) return;
    // httplib 0.11's stop() does nothing until the thread has entered its accept loop; that
    // happens right after the thread starts, without waiting on anything.
    while (!server_->is_running() && !done_) std::this_thread::yield();
    server_->stop();
    thread_.join();
  }

 private:
  httplib::Server* server_ = nullptr;
  std::thread thread_;
  std::atomic<bool> done_{false};
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_SANDBOX_HTTPLIB_SERVING_H_
