#include "rehearsal/fakeapi/api_store.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <variant>

#include "common/base/strings.h"
#include "common/kube/json_yaml.h"
#include "rehearsal/fakeapi/access_review.h"

namespace handoff::fakeapi {
namespace {

using kube::FindResourceTypeByKind;
using kube::FindResourceTypeByPath;
using kube::ObjectName;
using kube::ObjectNamespace;
using kube::StringAt;

ApiResponse Reply(int status, const Json& body) {
  ApiResponse response;
  response.status = status;
  // Messages quote names and selectors from the URL, which may hold any bytes; Go's encoder
  // writes invalid UTF-8 as U+FFFD, and nlohmann's would throw.
  response.body = body.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
  return response;
}

ApiResponse Error(int code, std::string_view reason, std::string_view message,
                  const ResourceType* type = nullptr, std::string_view name = "") {
  return Reply(code, StatusBody(code, reason, message, type, name));
}

// "roles.rbac.authorization.k8s.io \"x\"" as apimachinery's errors print a resource and name.
std::string Quoted(const ResourceType& type, std::string_view name) {
  return StrCat(type.QualifiedName(), " \"", name, "\"");
}

ApiResponse NotFound(const ResourceType& type, std::string_view name) {
  return Error(404, "NotFound", StrCat(Quoted(type, name), " not found"), &type, name);
}

// The message of apiserver's forbiddenMessage() wrapped by errors.NewForbidden.
ApiResponse Forbidden(const Access& access) {
  const ResourceType& type = *access.type;
  std::string reason = StrCat("User \"", access.user.name, "\" cannot ", access.verb,
                              " resource \"", type.plural, "\" in API group \"", type.group, "\"");
  if (!access.ns.empty()) {
    StrAppend(&reason, " in the namespace \"", access.ns, "\"");
  } else {
    StrAppend(&reason, " at the cluster scope");
  }
  const std::string subject =
      access.name.empty() ? type.QualifiedName() : Quoted(type, access.name);
  return Error(403, "Forbidden", StrCat(subject, " is forbidden: ", reason), &type, access.name);
}

// errors.NewInvalid: the details name the kind (not the resource) and list each field's cause.
ApiResponse NameRequired(const ResourceType& type) {
  const std::string qualified_kind =
      type.group.empty() ? std::string(type.kind) : StrCat(type.kind, ".", type.group);
  constexpr std::string_view kDetail = "Required value: name or generateName is required";
  Json body = StatusBody(422, "Invalid",
                         StrCat(qualified_kind, " \"\" is invalid: metadata.name: ", kDetail));
  Json details = Json::object();
  if (!type.group.empty()) details["group"] = std::string(type.group);
  details["kind"] = std::string(type.kind);
  details["causes"] = Json::array({Json{{"reason", "FieldValueRequired"},
                                        {"message", std::string(kDetail)},
                                        {"field", "metadata.name"}}});
  // StatusBody puts "code" last; keep it there.
  body.erase("code");
  body["details"] = details;
  body["code"] = 422;
  return Reply(422, body);
}

// metav1.MicroTime's UnmarshalJSON parses RFC3339Micro, "2006-01-02T15:04:05.000000Z07:00":
// exactly six fractional digits. client-go always writes them; a lease time with any other
// precision is refused by the decoder, before admission. Only the Z form is modelled.
bool IsMicroTime(std::string_view value) {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  if (value.size() != kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = value[i] >= '0' && value[i] <= '9';
    if (kShape[i] == 'd' ? !digit : value[i] != kShape[i]) return false;
  }
  return true;
}

// The decoder's 400 for a Lease whose spec.acquireTime or spec.renewTime is not a MicroTime;
// std::nullopt when both are (or are absent).
std::optional<ApiResponse> BadLeaseTime(const Json& lease) {
  if (!lease.contains("spec") || !lease["spec"].is_object()) return std::nullopt;
  for (const char* field : {"acquireTime", "renewTime"}) {
    auto it = lease["spec"].find(field);
    if (it == lease["spec"].end() || it->is_null() || !it->is_string()) continue;
    const std::string value = it->get<std::string>();
    if (IsMicroTime(value)) continue;
    // Go's time.Parse reports the input from where the layout's fraction starts, when the
    // date and time before it are well-formed; the fake says as much for anything else.
    const std::string rest = value.size() > 19 ? value.substr(19) : value;
    return Error(400, "BadRequest",
                 StrCat("Lease in version \"v1\" cannot be handled as a Lease: parsing time \"",
                        value, "\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"", rest,
                        "\" as \".000000\""));
  }
  return std::nullopt;
}

// Where `text` first nests arrays and objects deeper than `max_depth`: the offset of the bracket
// that goes one level too deep, or std::nullopt. One pass, no recursion, strings skipped; for
// text that is valid JSON up to that point this is the depth the parser would reach.
std::optional<size_t> FindNestingBeyond(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// summarizeData in k8s.io/apiserver/pkg/endpoints/handlers/rest.go: how a decode error quotes
// the body it could not decode.
std::string SummarizeBody(std::string_view body) {
  constexpr size_t kMaxLength = 30;
  if (body.empty()) return "<empty>";
  const std::string_view head = body.substr(0, kMaxLength);
  const std::string more = body.size() > kMaxLength ? " ..." : "";
  if (body.front() == '{') return StrCat(head, more);
  std::string hex;
  for (char c : head) {
    static constexpr char kDigits[] = "0123456789abcdef";
    hex.push_back(kDigits[static_cast<unsigned char>(c) >> 4]);
    hex.push_back(kDigits[static_cast<unsigned char>(c) & 0xf]);
  }
  return StrCat(hex, more);
}

// The label selector terms kube-apiserver accepts in their simple forms.
struct Requirement {
  std::string key;
  enum class Op { kExists, kNotExists, kEquals, kNotEquals } op = Op::kExists;
  std::string value;
};

std::optional<std::vector<Requirement>> ParseSelector(std::string_view selector) {
  std::vector<Requirement> requirements;
  if (StrContains(selector, "(")) return std::nullopt;  // set-based: not modelled
  for (std::string_view term : StrSplit(selector, ",", /*skip_empty=*/true)) {
    term = StripWhitespace(term);
    Requirement requirement;
    size_t at;
    if ((at = term.find("!=")) != std::string_view::npos) {
      requirement.op = Requirement::Op::kNotEquals;
      requirement.key = std::string(StripWhitespace(term.substr(0, at)));
      requirement.value = std::string(StripWhitespace(term.substr(at + 2)));
    } else if ((at = term.find("==")) != std::string_view::npos) {
      requirement.op = Requirement::Op::kEquals;
      requirement.key = std::string(StripWhitespace(term.substr(0, at)));
      requirement.value = std::string(StripWhitespace(term.substr(at + 2)));
    } else if ((at = term.find('=')) != std::string_view::npos) {
      requirement.op = Requirement::Op::kEquals;
      requirement.key = std::string(StripWhitespace(term.substr(0, at)));
      requirement.value = std::string(StripWhitespace(term.substr(at + 1)));
    } else if (StartsWith(term, "!")) {
      requirement.op = Requirement::Op::kNotExists;
      requirement.key = std::string(StripWhitespace(term.substr(1)));
    } else {
      requirement.key = std::string(term);
    }
    if (requirement.key.empty()) return std::nullopt;
    requirements.push_back(std::move(requirement));
  }
  return requirements;
}

bool Matches(const Json& object, const std::vector<Requirement>& requirements) {
  static const Json kNoLabels = Json::object();
  const Json* labels = &kNoLabels;
  if (object.contains("metadata") && object["metadata"].contains("labels") &&
      object["metadata"]["labels"].is_object()) {
    labels = &object["metadata"]["labels"];
  }
  for (const Requirement& requirement : requirements) {
    const auto it = labels->find(requirement.key);
    const bool has = it != labels->end();
    const std::string value = has && it->is_string() ? it->get<std::string>() : "";
    switch (requirement.op) {
      case Requirement::Op::kExists:
        if (!has) return false;
        break;
      case Requirement::Op::kNotExists:
        if (has) return false;
        break;
      case Requirement::Op::kEquals:
        if (!has || value != requirement.value) return false;
        break;
      case Requirement::Op::kNotEquals:
        if (has && value == requirement.value) return false;
        break;
    }
  }
  return true;
}

// errors.NewNotFound for a path no handler serves: kube-apiserver's NotFound handler sends empty
// details.
ApiResponse NoSuchResource() {
  Json body = StatusBody(404, "NotFound", "the server could not find the requested resource");
  body.erase("code");
  body["details"] = Json::object();
  body["code"] = 404;
  return Reply(404, body);
}

// The parsed path of a resource request.
struct Route {
  const ResourceType* type = nullptr;
  std::string ns;
  std::string name;
};

// Routes /api/v1/... and /apis/<group>/<version>/...; an error response when the path is not a
// resource the fake serves.
std::variant<Route, ApiResponse> RoutePath(std::string_view path) {
  const std::vector<std::string_view> segments = StrSplit(path, "/", /*skip_empty=*/true);
  auto not_found = [] {
    return NoSuchResource();
  };
  size_t next;
  std::string_view group;
  std::string_view version;
  if (segments.size() >= 2 && segments[0] == "api") {
    version = segments[1];
    next = 2;
  } else if (segments.size() >= 3 && segments[0] == "apis") {
    group = segments[1];
    version = segments[2];
    next = 3;
  } else {
    return not_found();
  }
  Route route;
  std::vector<std::string_view> rest(segments.begin() + static_cast<std::ptrdiff_t>(next),
                                     segments.end());
  if (rest.size() >= 2 && rest[0] == "namespaces") {
    route.ns = std::string(rest[1]);
    rest.erase(rest.begin(), rest.begin() + 2);
    if (rest.empty()) return not_found();  // Namespace objects are not modelled
  }
  if (rest.empty() || rest.size() > 2) return not_found();  // subresources are not modelled
  route.type = FindResourceTypeByPath(group, version, rest[0]);
  if (route.type == nullptr) return not_found();
  if (!route.type->namespaced && !route.ns.empty()) return not_found();
  if (rest.size() == 2) {
    // A namespaced object is only ever addressed inside its namespace.
    if (route.type->namespaced && route.ns.empty()) return not_found();
    route.name = std::string(rest[1]);
  }
  return route;
}

std::string FormatCreationTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

// As the API server returns list items: without apiVersion and kind.
Json ListItem(const Json& object) {
  Json item = object;
  item.erase("apiVersion");
  item.erase("kind");
  return item;
}

// Puts apiVersion and kind first, as the API server writes them, when the object lacks them.
Json WithTypeMeta(const Json& object, const ResourceType& type) {
  Json typed = Json::object();
  typed["kind"] = std::string(type.kind);
  typed["apiVersion"] = type.ApiVersion();
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (it.key() == "kind" || it.key() == "apiVersion") continue;
    typed[it.key()] = it.value();
  }
  return typed;
}

}  // namespace

Json StatusBody(int code, std::string_view reason, std::string_view message,
                const ResourceType* type, std::string_view name) {
  Json status = Json::object();
  status["kind"] = "Status";
  status["apiVersion"] = "v1";
  status["metadata"] = Json::object();
  status["status"] = "Failure";
  status["message"] = std::string(message);
  status["reason"] = std::string(reason);
  if (type != nullptr) {
    Json details = Json::object();
    if (!name.empty()) details["name"] = std::string(name);
    if (!type->group.empty()) details["group"] = std::string(type->group);
    details["kind"] = std::string(type->plural);
    status["details"] = details;
  }
  status["code"] = code;
  return status;
}

ApiStore::ApiStore() : owned_clock_(NewRealClock()), clock_(owned_clock_.get()) {}

ApiStore::ApiStore(Clock& clock) : clock_(&clock) {}

ApiStore::Key ApiStore::KeyOf(const ResourceType& type, std::string_view ns,
                              std::string_view name) {
  return Key(type.QualifiedName(), type.namespaced ? std::string(ns) : std::string(),
             std::string(name));
}

std::string ApiStore::NextResourceVersion() { return std::to_string(++resource_version_); }

void ApiStore::Stamp(Json& object, const Json* previous) {
  Json& metadata = object["metadata"];
  if (previous != nullptr) {
    // The server owns these; an update cannot change them.
    metadata["uid"] = StringAt(*previous, {"metadata", "uid"});
    metadata["creationTimestamp"] = StringAt(*previous, {"metadata", "creationTimestamp"});
  }
  if (StringAt(object, {"metadata", "uid"}).empty()) {
    char uid[64];
    std::snprintf(uid, sizeof(uid), "fa4e0000-0000-4000-8000-%012lld",
                  static_cast<long long>(++uids_));
    metadata["uid"] = uid;
  }
  metadata["resourceVersion"] = NextResourceVersion();
  if (StringAt(object, {"metadata", "creationTimestamp"}).empty()) {
    metadata["creationTimestamp"] = FormatCreationTime(clock_->Now());
  }
}

absl::Status ApiStore::Put(Json object) {
  std::lock_guard<std::mutex> lock(mutex_);
  const ResourceType* type =
      FindResourceTypeByKind(StringAt(object, {"apiVersion"}), StringAt(object, {"kind"}));
  if (type == nullptr) {
    return absl::InvalidArgumentError(StrCat("the fake API server does not model ",
                                             StringAt(object, {"apiVersion"}), " ",
                                             StringAt(object, {"kind"}),
                                             " (it serves Lease, Role, RoleBinding, ClusterRole, "
                                             "ClusterRoleBinding, Node, Pod, ConfigMap, DaemonSet, "
                                             "PersistentVolume, StorageClass, CSIDriver)"));
  }
  if (type->QualifiedName() == kube::kSubjectAccessReviews.QualifiedName()) {
    return absl::InvalidArgumentError("a SubjectAccessReview is answered, never stored");
  }
  const std::string name = ObjectName(object);
  if (name.empty()) return absl::InvalidArgumentError(StrCat(type->kind, " without metadata.name"));
  std::string ns = ObjectNamespace(object);
  if (type->namespaced && ns.empty()) {
    ns = "default";
    object["metadata"]["namespace"] = ns;
  }
  const Key key = KeyOf(*type, ns, name);
  auto existing = objects_.find(key);
  if (existing != objects_.end()) {
    // A replacement keeps the object's identity unless the new one brings its own.
    for (const char* field : {"uid", "creationTimestamp"}) {
      if (StringAt(object, {"metadata", field}).empty()) {
        object["metadata"][field] = StringAt(existing->second, {"metadata", field});
      }
    }
  }
  Stamp(object, nullptr);
  objects_[key] = std::move(object);
  return absl::OkStatus();
}

absl::Status ApiStore::Seed(std::string_view text, std::string_view source) {
  absl::StatusOr<std::vector<Json>> objects = kube::ParseObjects(text, source);
  if (!objects.ok()) return objects.status();
  for (Json& object : *objects) {
    absl::Status put = Put(std::move(object));
    if (!put.ok()) return absl::InvalidArgumentError(StrCat(source, ": ", put.message()));
  }
  return absl::OkStatus();
}

std::optional<Json> ApiStore::Get(const ResourceType& type, std::string_view ns,
                                  std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = objects_.find(KeyOf(type, ns, name));
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<Json> ApiStore::List(const ResourceType& type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Json> items;
  for (const auto& [key, object] : objects_) {
    if (std::get<0>(key) == type.QualifiedName()) items.push_back(object);
  }
  return items;
}

bool ApiStore::Remove(const ResourceType& type, std::string_view ns, std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  return objects_.erase(KeyOf(type, ns, name)) > 0;
}

int64_t ApiStore::resource_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resource_version_;
}

void ApiStore::Forbid(std::string user, std::string verb, std::string plural, std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  forbid_.push_back(
      ForbidRule{std::move(user), std::move(verb), std::move(plural), std::move(name)});
}

void ApiStore::SetAuthorizer(std::function<bool(const Access&)> allow) {
  std::lock_guard<std::mutex> lock(mutex_);
  authorizer_ = std::move(allow);
}

void ApiStore::InjectConflicts(const ResourceType& type, std::string_view ns, std::string_view name,
                               int count, std::function<void(Json&)> change) {
  std::lock_guard<std::mutex> lock(mutex_);
  conflicts_[KeyOf(type, ns, name)] = PendingConflicts{count, std::move(change)};
}

void ApiStore::FailNextRequests(int count, int status, std::string method) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_ = PendingFailures{count, status, std::move(method)};
}

std::vector<RequestRecord> ApiStore::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return log_;
}

void ApiStore::ClearRequests() {
  std::lock_guard<std::mutex> lock(mutex_);
  log_.clear();
}

bool ApiStore::Allowed(const Access& access) const {
  for (const ForbidRule& rule : forbid_) {
    if ((rule.user == "*" || rule.user == access.user.name) &&
        (rule.verb == "*" || rule.verb == access.verb) &&
        (rule.plural == "*" || rule.plural == access.type->plural) &&
        (rule.name.empty() || rule.name == access.name)) {
      return false;
    }
  }
  if (authorizer_) return authorizer_(access);
  return access.user.name != kAnonymousUser;
}

ApiResponse ApiStore::Handle(const ApiRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  ApiResponse response;
  try {
    response = HandleLocked(request);
  } catch (const std::exception& e) {
    response = Error(500, "InternalError", StrCat("Internal error occurred: ", e.what()));
  }
  log_.push_back(RequestRecord{request.method, request.path,
                               request.user ? request.user->name : std::string(), response.status});
  return response;
}

ApiResponse ApiStore::HandleLocked(const ApiRequest& request) {
  if (failures_.count > 0 && (failures_.method.empty() || failures_.method == request.method)) {
    --failures_.count;
    const int code = failures_.status;
    ApiResponse response;
    if (code == 429) {
      response = Error(429, "TooManyRequests", "Too many requests, please try again later.");
      response.headers["Retry-After"] = "1";
    } else if (code == 503) {
      response = Error(503, "ServiceUnavailable",
                       "the server is currently unable to handle the "
                       "request");
    } else if (code >= 500) {
      response = Error(code, "InternalError", "Internal error occurred: injected by the test");
    } else {
      response = Error(code, "BadRequest", "injected by the test");
    }
    return response;
  }
  if (!request.user) return Error(401, "Unauthorized", "Unauthorized");

  std::variant<Route, ApiResponse> routed = RoutePath(request.path);
  if (std::holds_alternative<ApiResponse>(routed)) return std::get<ApiResponse>(routed);
  const Route& route = std::get<Route>(routed);
  const ResourceType& type = *route.type;

  Access access;
  access.user = *request.user;
  access.type = route.type;
  access.ns = route.ns;
  access.name = route.name;
  const bool collection = route.name.empty();
  auto watch = request.query.find("watch");
  const bool watching =
      watch != request.query.end() && (watch->second == "true" || watch->second == "1");
  if (request.method == "GET") {
    access.verb = watching ? "watch" : collection ? "list" : "get";
  } else if (request.method == "POST") {
    access.verb = "create";
  } else if (request.method == "PUT") {
    access.verb = "update";
  } else if (request.method == "DELETE") {
    access.verb = collection ? "deletecollection" : "delete";
  } else if (request.method == "PATCH") {
    access.verb = "patch";
  } else {
    return Error(405, "MethodNotAllowed", StrCat(request.method, " is not allowed"));
  }
  if (!Allowed(access)) return Forbidden(access);
  const bool review = type.QualifiedName() == kube::kSubjectAccessReviews.QualifiedName();
  if (review && (request.method != "POST" || !collection)) {
    return Error(405, "MethodNotAllowed",
                 "the server does not allow this method on the requested resource");
  }

  if (watching) {
    return Error(405, "MethodNotAllowed", "watch is not modelled by the fake API server; poll");
  }
  if (request.method == "PATCH") {
    return Error(405, "MethodNotAllowed",
                 "PATCH is not modelled by the fake API server; use GET and PUT");
  }

  if (request.method == "GET" && collection) {
    std::vector<Requirement> requirements;
    auto selector = request.query.find("labelSelector");
    if (selector != request.query.end()) {
      std::optional<std::vector<Requirement>> parsed = ParseSelector(selector->second);
      if (!parsed) {
        return Error(400, "BadRequest",
                     StrCat("unable to parse requirement: the fake API server models only "
                            "k, !k, k=v, k==v and k!=v selectors, not \"",
                            selector->second, "\""));
      }
      requirements = *std::move(parsed);
    }
    Json list = Json::object();
    list["kind"] = StrCat(type.kind, "List");
    list["apiVersion"] = type.ApiVersion();
    list["metadata"] = Json::object({{"resourceVersion", std::to_string(resource_version_)}});
    list["items"] = Json::array();
    for (const auto& [key, object] : objects_) {
      if (std::get<0>(key) != type.QualifiedName()) continue;
      if (!route.ns.empty() && std::get<1>(key) != route.ns) continue;
      if (!Matches(object, requirements)) continue;
      list["items"].push_back(ListItem(object));
    }
    return Reply(200, list);
  }

  if (request.method == "GET") {
    auto it = objects_.find(KeyOf(type, route.ns, route.name));
    if (it == objects_.end()) return NotFound(type, route.name);
    return Reply(200, WithTypeMeta(it->second, type));
  }

  if (request.method == "DELETE") {
    if (collection) {
      return Error(405, "MethodNotAllowed", "deletecollection is not modelled");
    }
    auto it = objects_.find(KeyOf(type, route.ns, route.name));
    if (it == objects_.end()) return NotFound(type, route.name);
    const std::string uid = StringAt(it->second, {"metadata", "uid"});
    objects_.erase(it);
    ++resource_version_;
    Json status = Json::object();
    status["kind"] = "Status";
    status["apiVersion"] = "v1";
    status["metadata"] = Json::object();
    status["status"] = "Success";
    Json details = Json::object();
    details["name"] = route.name;
    if (!type.group.empty()) details["group"] = std::string(type.group);
    details["kind"] = std::string(type.plural);
    if (!uid.empty()) details["uid"] = uid;
    status["details"] = details;
    return Reply(200, status);
  }

  // POST and PUT carry an object. The body's size is checked first, then its depth, then it is
  // parsed, in the order kube-apiserver reads (limitedReadBody) and decodes it.
  if (request.body_too_large || request.body.size() > kMaxRequestBodyBytes) {
    return Error(413, "RequestEntityTooLarge",
                 StrCat("Request entity too large: limit is ", kMaxRequestBodyBytes));
  }
  if (std::optional<size_t> at = FindNestingBeyond(request.body, kMaxJsonDepth)) {
    // The decoder's error when it cannot even find apiVersion and kind (transformDecodeError in
    // handlers/rest.go around Go's scanner error).
    return Error(400, "BadRequest",
                 StrCat("the object provided is unrecognized (must be of type ", type.kind,
                        "): couldn't get version/kind; json parse error: invalid character '",
                        request.body[*at], "' exceeded max depth (", SummarizeBody(request.body),
                        ")"));
  }
  Json object = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) {
    return Error(400, "BadRequest",
                 "the body of the request was in an unknown format - accepted media types "
                 "include: application/json, application/yaml");
  }
  const std::string api_version = StringAt(object, {"apiVersion"});
  const std::string kind = StringAt(object, {"kind"});
  if ((!api_version.empty() && api_version != type.ApiVersion()) ||
      (!kind.empty() && kind != type.kind)) {
    return Error(400, "BadRequest",
                 StrCat("the API version in the data (", api_version, ") and kind (", kind,
                        ") do not match the expected ", type.ApiVersion(), " ", type.kind));
  }
  object = WithTypeMeta(object, type);
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    object["metadata"] = Json::object();
  }
  if (type.QualifiedName() == kube::kLeases.QualifiedName()) {
    if (std::optional<ApiResponse> bad = BadLeaseTime(object)) return *bad;
  }
  const std::string body_ns = ObjectNamespace(object);
  if (type.namespaced && !body_ns.empty() && body_ns != route.ns) {
    return Error(400, "BadRequest",
                 "the namespace of the provided object does not match the namespace sent on the "
                 "request");
  }
  if (type.namespaced) object["metadata"]["namespace"] = route.ns;
  const std::string name = ObjectName(object);

  if (review) {
    return Reply(201, ReviewAccess(object, [this](const ResourceType& listed) {
                   std::vector<Json> items;
                   for (const auto& [key, stored] : objects_) {
                     if (std::get<0>(key) == listed.QualifiedName()) items.push_back(stored);
                   }
                   return items;
                 }));
  }
  if (request.method == "POST") {
    if (!collection) {
      return Error(405, "MethodNotAllowed", "POST is allowed on collections only");
    }
    if (type.namespaced && route.ns.empty()) {
      return NoSuchResource();
    }
    if (name.empty()) return NameRequired(type);
    const Key key = KeyOf(type, route.ns, name);
    if (objects_.count(key) > 0) {
      return Error(409, "AlreadyExists", StrCat(Quoted(type, name), " already exists"), &type,
                   name);
    }
    object["metadata"].erase("resourceVersion");
    object["metadata"].erase("uid");
    object["metadata"].erase("creationTimestamp");
    Stamp(object, nullptr);
    objects_[key] = object;
    return Reply(201, object);
  }

  // PUT
  if (collection) return Error(405, "MethodNotAllowed", "PUT is allowed on objects only");
  if (name.empty()) return NameRequired(type);
  if (name != route.name) {
    return Error(400, "BadRequest",
                 StrCat("the name of the object (", name, ") does not match the name on the URL (",
                        route.name, ")"));
  }
  const Key key = KeyOf(type, route.ns, name);
  auto it = objects_.find(key);
  if (it == objects_.end()) return NotFound(type, name);
  auto pending = conflicts_.find(key);
  if (pending != conflicts_.end() && pending->second.count > 0) {
    // Another client's write lands first.
    --pending->second.count;
    if (pending->second.change) pending->second.change(it->second);
    it->second["metadata"]["resourceVersion"] = NextResourceVersion();
  }
  const std::string sent_version = kube::ResourceVersion(object);
  if (!sent_version.empty() && sent_version != kube::ResourceVersion(it->second)) {
    return Error(409, "Conflict",
                 StrCat("Operation cannot be fulfilled on ", Quoted(type, name),
                        ": the object has been modified; please apply your changes to the latest "
                        "version and try again"),
                 &type, name);
  }
  Stamp(object, &it->second);
  it->second = object;
  return Reply(200, object);
}

}  // namespace handoff::fakeapi
