// The fake Kubernetes API server's behaviour, without HTTP: an in-memory store of Leases, Roles,
// RoleBindings, ClusterRoles, ClusterRoleBindings, Nodes, Pods, ConfigMaps, DaemonSets,
// PersistentVolumes, StorageClasses and CSIDrivers answering REST requests the way
// kube-apiserver does for what it models:
//   - GET (object and list, labelSelector with =, ==, != and existence terms), POST (create;
//     409 AlreadyExists), PUT (update; 409 Conflict when metadata.resourceVersion is stale,
//     unconditional without one; 404 when missing; 400 for a name that differs from the URL's),
//     DELETE; 422 for an object without a name;
//   - one resourceVersion counter for every write, as etcd's revision;
//   - errors as metav1.Status bodies with the real messages, reasons and details (422 Invalid
//     with the kind and the field's cause, DELETE's Success with the uid);
//   - bodies longer than kMaxRequestBodyBytes get 413, bodies nested deeper than kMaxJsonDepth 400
//     (kube-apiserver's limit is deeper; README.md);
//   - Lease acquireTime/renewTime must be MicroTime (six fractional digits, Z), else 400 as the
//     real decoder answers;
//   - authorization per user and verb (403 with the real message), 401 for failed authentication;
//   - SubjectAccessReview (POST only, never stored), answered from the stored RBAC objects as the
//     RBAC authorizer answers (access_review.h);
//   - fault injection for tests: concurrent writes that make the next updates conflict, and
//     failures (5xx, 429) for the next requests.
// Not modelled: watch, PATCH, subresources, namespaces as objects, field selectors, paging,
// admission, RBAC escalation checks, managedFields (README.md lists every known difference from
// kube-apiserver 1.26). Thread-safe.
#ifndef HANDOFF_REHEARSAL_FAKEAPI_API_STORE_H_
#define HANDOFF_REHEARSAL_FAKEAPI_API_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "common/system/clock.h"
#include "common/kube/resource.h"

namespace handoff::fakeapi {

using kube::Json;
using kube::ResourceType;

// An authenticated user, as the API server's authenticators produce it.
struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
};

inline constexpr std::string_view kAnonymousUser = "system:anonymous";

// kube-apiserver refuses a write whose body is longer than this with 413 RequestEntityTooLarge
// ("Request entity too large: limit is 3145728"): MaxRequestBodyBytes in
// k8s.io/apiserver/pkg/server/config.go NewConfig, twice etcd's 1.5 MiB request limit because
// JSON shrinks when stored as protobuf; enforced by limitedReadBody in
// k8s.io/apiserver/pkg/endpoints/handlers/rest.go.
inline constexpr size_t kMaxRequestBodyBytes = 3 * 1024 * 1024;

// Request bodies nested deeper than this (arrays and objects) are refused with 400 before they
// are parsed. kube-apiserver's decoder (Go's encoding/json, maxNestingDepth in
// src/encoding/json/scanner.go) allows 10000 levels; the fake allows fewer because nlohmann-json
// copies and prints a document recursively, one stack frame per level. Measured per level, the
// deeper of the two: 113 bytes at -O3, 1.7 KB with GCC's ASan at -O0, 0.9 KB with clang's ASan at
// -O2 (the fuzzing build), 9.4 KB with clang's ASan at -O0 (the worst seen). At 512 levels that is
// at most 4.8 MB, within the 8 MiB stack of a main thread; the server's own thread has 64 MiB
// (fake_api_server.cc). Objects that handoff and Kubernetes write nest fewer than 30 levels.
inline constexpr int kMaxJsonDepth = 512;

struct ApiRequest {
  std::string method;                        // GET, POST, PUT, DELETE, PATCH
  std::string path;                          // decoded: "/api/v1/namespaces/kube-system/pods/x"
  std::map<std::string, std::string> query;  // decoded: {"labelSelector": "a=b"}
  std::string body;
  // The HTTP layer stopped reading the body past kMaxRequestBodyBytes: `body` is empty, and a
  // write (POST, PUT) gets 413 once authenticated and authorized, as kube-apiserver answers.
  bool body_too_large = false;
  // std::nullopt: authentication failed (an unknown token): 401. Anonymous requests carry
  // system:anonymous, which the default policy denies.
  std::optional<UserInfo> user;
};

struct ApiResponse {
  int status = 200;
  std::string body;  // JSON
  std::map<std::string, std::string> headers;
};

// What a request asks to do, for authorization.
struct Access {
  UserInfo user;
  std::string verb;  // get, list, create, update, delete, patch, watch
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;  // "" for list and create
};

// One request as served, for tests that count or inspect them.
struct RequestRecord {
  std::string method;
  std::string path;
  std::string user;  // "" when authentication failed
  int status = 0;
};

class ApiStore {
 public:
  // Timestamps (creationTimestamp) come from the system clock.
  ApiStore();
  // Borrows `clock`, which must outlive the store.
  explicit ApiStore(Clock& clock);
  ApiStore(const ApiStore&) = delete;
  ApiStore& operator=(const ApiStore&) = delete;

  // Never throws: a failure inside the handler is a 500 InternalError Status, as kube-apiserver's
  // panic recovery answers.
  ApiResponse Handle(const ApiRequest& request);

  // --- Setup and inspection (no authorization, no fault injection, not logged) ---

  // Creates or replaces an object of a known kind (apiVersion and kind select the type), giving
  // it a new resourceVersion (and a uid and creationTimestamp when it has none).
  absl::Status Put(Json object);
  // Put for every object in a YAML (multi-document, or a List) or JSON file's text.
  absl::Status Seed(std::string_view text, std::string_view source);
  std::optional<Json> Get(const ResourceType& type, std::string_view ns,
                          std::string_view name) const;
  // Every object of a type, sorted by namespace and name.
  std::vector<Json> List(const ResourceType& type) const;
  bool Remove(const ResourceType& type, std::string_view ns, std::string_view name);
  // The last resourceVersion handed out.
  int64_t resource_version() const;

  // --- Authorization ---
  // By default every authenticated user may do everything, and system:anonymous nothing.
  // A forbid rule denies `verb` ("*": any) on `plural` ("*": any) to `user` ("*": anyone),
  // for one object when `name` is set. Forbid rules win over the policy.
  void Forbid(std::string user, std::string verb, std::string plural, std::string name = "");
  // Replaces the default policy; forbid rules still apply.
  void SetAuthorizer(std::function<bool(const Access&)> allow);

  // --- Faults ---
  // The next `count` updates (PUT) of the object meet a concurrent write first: the store applies
  // `change` (if any) to the stored object and gives it a new resourceVersion, as another client
  // would, so the request's resourceVersion is stale and it gets 409 Conflict.
  void InjectConflicts(const ResourceType& type, std::string_view ns, std::string_view name,
                       int count, std::function<void(Json&)> change = nullptr);
  // The next `count` requests (of `method` only, when set) fail with `status` (500, 503, 429...)
  // and a Status body; a 429 carries Retry-After: 1.
  void FailNextRequests(int count, int status, std::string method = "");

  // --- Request log ---
  std::vector<RequestRecord> requests() const;
  void ClearRequests();

 private:
  using Key = std::tuple<std::string, std::string, std::string>;  // plural.group, ns, name
  static Key KeyOf(const ResourceType& type, std::string_view ns, std::string_view name);

  ApiResponse HandleLocked(const ApiRequest& request);
  bool Allowed(const Access& access) const;
  void Stamp(Json& object, const Json* previous);
  std::string NextResourceVersion();

  mutable std::mutex mutex_;
  std::unique_ptr<Clock> owned_clock_;
  Clock* clock_;
  std::map<Key, Json> objects_;
  int64_t resource_version_ = 1000;
  int64_t uids_ = 0;
  struct ForbidRule {
    std::string user, verb, plural, name;
  };
  std::vector<ForbidRule> forbid_;
  std::function<bool(const Access&)> authorizer_;
  struct PendingConflicts {
    int count = 0;
    std::function<void(Json&)> change;
  };
  std::map<Key, PendingConflicts> conflicts_;
  struct PendingFailures {
    int count = 0;
    int status = 0;
    std::string method;
  };
  PendingFailures failures_;
  std::vector<RequestRecord> log_;
};

// The metav1.Status body kube-apiserver sends with an error.
Json StatusBody(int code, std::string_view reason, std::string_view message,
                const ResourceType* type = nullptr, std::string_view name = "");

}  // namespace handoff::fakeapi

#endif  // HANDOFF_REHEARSAL_FAKEAPI_API_STORE_H_
