// A small Kubernetes REST client: get, list, create, update and delete of JSON objects, and
// read-modify-write with optimistic concurrency (resourceVersion, retried on 409 Conflict).
//
// Errors are absl::Status values whose messages an operator can act on:
//   Unauthenticated   401: "unauthorized: check the credentials in <kubeconfig> ..."
//   PermissionDenied  403: "forbidden: <user> cannot <verb> <resource> <name> in <ns> (the server
//                     said: ...)"
//   NotFound          404, naming the object
//   AlreadyExists     409 on create
//   Aborted           409 on update (a stale resourceVersion); Mutate retries these itself
//   InvalidArgument   400/422, with the server's message
//   Unavailable       no connection, 429 or 5xx once the retries are spent
// Connection errors, 429 and 5xx are retried a bounded number of times with exponential backoff
// (waiting on the injected Clock); 5xx and timeouts only for requests that are safe to repeat
// (everything but POST).
#ifndef HANDOFF_COMMON_KUBE_CLIENT_H_
#define HANDOFF_COMMON_KUBE_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/system/clock.h"
#include "common/kube/http_transport.h"
#include "common/kube/kubeconfig.h"
#include "common/kube/resource.h"

namespace handoff::kube {

struct ClientOptions {
  absl::Duration request_timeout = absl::Seconds(30);
  // Retries after the first attempt, for connection errors, 429 and 5xx.
  int max_retries = 3;
  absl::Duration initial_backoff = absl::Milliseconds(500);  // doubled per retry
  absl::Duration max_backoff = absl::Seconds(8);             // also caps a 429's Retry-After
  // Mutate re-reads and re-applies its change after a 409 Conflict this many times.
  int max_conflict_retries = 5;
  // For messages: the kubeconfig and the user the server sees.
  std::string kubeconfig;
  std::string identity;
};

// The options for a cluster's credentials (kubeconfig and identity filled in).
ClientOptions ClientOptionsFor(const ClusterCredentials& credentials);

// Changes `object` in place; returns whether it changed anything. It may run more than once
// (once per conflict), each time on the object as it is on the server then.
using Mutation = std::function<absl::StatusOr<bool>(Json& object)>;

struct MutateResult {
  Json object;           // as the server returned it after the update, or as read when unchanged
  bool changed = false;  // false: the mutation found nothing to do, nothing was written
  int conflicts = 0;     // 409s met (and retried) on the way
};

// Thread-compatible.
class KubeClient {
 public:
  // Owns `transport`; borrows `clock`, which must outlive the client.
  KubeClient(std::unique_ptr<HttpTransport> transport, Clock& clock, ClientOptions options);

  absl::StatusOr<Json> Get(const ObjectRef& ref);
  // The items of a collection (all namespaces when `ns` is empty), optionally filtered by a label
  // selector ("node-role.kubernetes.io/control-plane", "app=x,tier!=y").
  absl::StatusOr<std::vector<Json>> List(const ResourceType& type, std::string_view ns,
                                         std::string_view label_selector = "");
  // POST; returns the object as created (with resourceVersion and uid).
  absl::StatusOr<Json> Create(const ResourceType& type, std::string_view ns, const Json& object);
  // PUT of the whole object. With metadata.resourceVersion set, the server applies it only if
  // that is still the current version (Aborted otherwise).
  absl::StatusOr<Json> Update(const ObjectRef& ref, const Json& object);
  // DELETE; `now`: with gracePeriodSeconds=0, so that a pod is gone at once rather than
  // terminating until its kubelet confirms (there may be none to confirm it).
  absl::Status Delete(const ObjectRef& ref, bool now = false);
  // GET, `mutate`, PUT with the resourceVersion read; on a conflict, again from the GET, up to
  // max_conflict_retries times. The mutation never changes metadata.resourceVersion.
  absl::StatusOr<MutateResult> Mutate(const ObjectRef& ref, const Mutation& mutate);

  // HTTP requests sent so far, retries included.
  int requests_sent() const { return requests_sent_; }
  const ClientOptions& options() const { return options_; }

 private:
  struct Exchange {
    absl::StatusOr<HttpResponse> response;
    int attempts = 0;
  };
  Exchange Send(const std::string& method, const std::string& path, const std::string& body);
  // The error for a non-2xx response to `verb` on `type` (`ns`/`name` may be empty).
  absl::Status ResponseError(std::string_view verb, const ResourceType& type, std::string_view ns,
                             std::string_view name, const Exchange& exchange) const;

  std::unique_ptr<HttpTransport> transport_;
  Clock& clock_;
  ClientOptions options_;
  int requests_sent_ = 0;
};

}  // namespace handoff::kube

#endif  // HANDOFF_COMMON_KUBE_CLIENT_H_
