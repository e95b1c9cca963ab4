// Test helper: an HttpTransport that forwards every request to another one and lets a test step in
// at a chosen request: run something just before it goes out (another writer changing the object
// between a client's read and its write, so that a guarded PUT meets 409), or lose its answer
// after the server processed it. Counts and keeps what was sent. Thread-compatible; a hook may use
// other clients, not the one this transport serves.
#ifndef HANDOFF_TESTS_COORDINATOR_KUBE_INTERPOSING_TRANSPORT_H_
#define HANDOFF_TESTS_COORDINATOR_KUBE_INTERPOSING_TRANSPORT_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/kube/http_transport.h"

namespace handoff::testing {

class InterposingTransport : public kube::HttpTransport {
 public:
  using Hook = std::function<void(const kube::HttpRequest&)>;

  explicit InterposingTransport(std::unique_ptr<kube::HttpTransport> inner)
      : inner_(std::move(inner)) {}

  // Runs `hook` before each of the next `count` requests whose method is `method`.
  void BeforeNext(std::string method, int count, Hook hook) {
    before_[std::move(method)] = Pending{count, std::move(hook)};
  }
  // Sends the next request whose method is `method`, then answers `error` instead of the server's
  // answer: the server applied it, the client never heard (as the transport's Internal means).
  void LoseNextAnswer(std::string method, absl::Status error) {
    lose_[std::move(method)] = std::move(error);
  }

  // Requests sent with `method` so far, and their bodies in order.
  int sent(const std::string& method) const {
    auto it = bodies_.find(method);
    return it == bodies_.end() ? 0 : static_cast<int>(it->second.size());
  }
  const std::vector<std::string>& bodies(const std::string& method) { return bodies_[method]; }

  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    auto before = before_.find(request.method);
    if (before != before_.end() && before->second.count > 0) {
      --before->second.count;
      before->second.hook(request);
    }
    bodies_[request.method].push_back(request.body);
    absl::StatusOr<kube::HttpResponse> response = inner_->Send(request);
    auto lose = lose_.find(request.method);
    if (lose != lose_.end()) {
      absl::Status error = std::move(lose->second);
      lose_.erase(lose);
      return error;
    }
    return response;
  }

 private:
  struct Pending {
    int count = 0;
    Hook hook;
  };
  std::unique_ptr<kube::HttpTransport> inner_;
  std::map<std::string, Pending> before_;
  std::map<std::string, absl::Status> lose_;
  std::map<std::string, std::vector<std::string>> bodies_;
};

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COORDINATOR_KUBE_INTERPOSING_TRANSPORT_H_
