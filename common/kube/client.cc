#include "common/kube/client.h"

#include <algorithm>
#include <cstdlib>

#include "common/base/strings.h"
#include "common/system/backoff.h"

namespace handoff::kube {
namespace {

// The server's own words from a Status body, or the start of whatever else it sent.
std::string ServerMessage(const HttpResponse& response) {
  Json status = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    return status["message"].get<std::string>();
  }
  std::string text(StripWhitespace(response.body));
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text.empty() ? StrCat("HTTP ", response.status) : text;
}

// "roles.rbac.authorization.k8s.io system::x in kube-system", "nodes at the cluster scope".
std::string Target(const ResourceType& type, std::string_view ns, std::string_view name) {
  std::string target = type.QualifiedName();
  if (!name.empty()) StrAppend(&target, " ", name);
  if (!ns.empty()) {
    StrAppend(&target, " in ", ns);
  } else if (!type.namespaced) {
    StrAppend(&target, " at the cluster scope");
  } else {
    StrAppend(&target, " in all namespaces");
  }
  return target;
}

std::string Describe(const ResourceType& type, std::string_view ns, std::string_view name) {
  if (name.empty()) return Target(type, ns, name);
  return ObjectRef{&type, std::string(ns), std::string(name)}.ToString();
}

bool IsSuccess(int status) { return status >= 200 && status < 300; }

absl::StatusOr<Json> ParseObject(const HttpResponse& response, std::string_view what) {
  Json object = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object()) {
    return absl::InternalError(StrCat(what, ": the API server answered HTTP ", response.status,
                                      " with a body that is not a "
                                      "JSON object"));
  }
  return object;
}

}  // namespace

ClientOptions ClientOptionsFor(const ClusterCredentials& credentials) {
  ClientOptions options;
  options.kubeconfig = credentials.kubeconfig;
  options.identity = credentials.identity;
  return options;
}

KubeClient::KubeClient(std::unique_ptr<HttpTransport> transport, Clock& clock,
                       ClientOptions options)
    : transport_(std::move(transport)), clock_(clock), options_(std::move(options)) {}

KubeClient::Exchange KubeClient::Send(const std::string& method, const std::string& path,
                                      const std::string& body) {
  // POST is the one request that is not safe to repeat when the server may have seen it: a
  // create that succeeded but whose answer was lost would then fail with AlreadyExists.
  const bool idempotent = method != "POST";
  HttpRequest request;
  request.method = method;
  request.path = path;
  request.body = body;
  request.timeout = options_.request_timeout;
  Backoff backoff(options_.initial_backoff, options_.max_backoff);
  Exchange exchange;
  while (true) {
    ++exchange.attempts;
    ++requests_sent_;
    exchange.response = transport_->Send(request);
    bool retry = false;
    // One client's requests retry in step with nobody else's: the plain doubling.
    absl::Duration wait = backoff.Next(Backoff::kNoJitter);
    if (!exchange.response.ok()) {
      const absl::StatusCode code = exchange.response.status().code();
      retry = code == absl::StatusCode::kUnavailable ||
              (idempotent && (code == absl::StatusCode::kDeadlineExceeded ||
                              code == absl::StatusCode::kInternal));
    } else if (exchange.response->status == 429) {
      // Too Many Requests (API Priority and Fairness): the request was not processed.
      retry = true;
      auto retry_after = exchange.response->headers.find("retry-after");
      if (retry_after != exchange.response->headers.end()) {
        const long seconds = std::strtol(retry_after->second.c_str(), nullptr, 10);
        if (seconds > 0) wait = std::min(absl::Seconds(seconds), options_.max_backoff);
      }
    } else if (exchange.response->status >= 500 && idempotent) {
      retry = true;
    }
    if (!retry || exchange.attempts > options_.max_retries) return exchange;
    clock_.SleepFor(wait);
  }
}

absl::Status KubeClient::ResponseError(std::string_view verb, const ResourceType& type,
                                       std::string_view ns, std::string_view name,
                                       const Exchange& exchange) const {
  const std::string what = StrCat(verb, " ", Describe(type, ns, name));
  if (!exchange.response.ok()) {
    const absl::Status& status = exchange.response.status();
    if (exchange.attempts > 1) {
      return absl::Status(status.code(), StrCat(what, ": ", status.message(), " (after ",
                                                exchange.attempts, " attempts)"));
    }
    return absl::Status(status.code(), StrCat(what, ": ", status.message()));
  }
  const HttpResponse& response = *exchange.response;
  const std::string server_said = ServerMessage(response);
  switch (response.status) {
    case 401:
      return absl::UnauthenticatedError(StrCat("unauthorized: check the credentials in ",
                                               options_.kubeconfig, " (user \"", options_.identity,
                                               "\"); the API server rejected them on ", what,
                                               " (the server said: ", server_said, ")"));
    case 403:
      return absl::PermissionDeniedError(
          StrCat("forbidden: ", options_.identity, " cannot ", verb, " ", Target(type, ns, name),
                 " (the server said: ", server_said, "); use a kubeconfig whose user may ", verb,
                 " ", type.plural, ", e.g. /etc/kubernetes/admin.conf on a control-plane node"));
    case 404:
      if (name.empty()) {
        return absl::NotFoundError(StrCat(what, ": the API server does not serve ",
                                          type.QualifiedName(), " (", server_said, ")"));
      }
      return absl::NotFoundError(StrCat(Describe(type, ns, name), " not found"));
    case 409:
      if (verb == "create") {
        return absl::AlreadyExistsError(StrCat(Describe(type, ns, name), " already exists"));
      }
      return absl::AbortedError(
          StrCat(what,
                 ": conflict, the object changed on the server since it was read (the "
                 "server said: ",
                 server_said, ")"));
    case 400:
    case 422:
      return absl::InvalidArgumentError(
          StrCat(what, ": the API server rejected it (HTTP ", response.status, "): ", server_said));
    default:
      break;
  }
  if (response.status == 429 || response.status >= 500) {
    return absl::UnavailableError(StrCat(what, ": HTTP ", response.status, " after ",
                                         exchange.attempts, " attempt(s): ", server_said));
  }
  return absl::UnknownError(StrCat(what, ": unexpected HTTP ", response.status, ": ", server_said));
}

absl::StatusOr<Json> KubeClient::Get(const ObjectRef& ref) {
  Exchange exchange = Send("GET", ObjectPath(ref), "");
  if (!exchange.response.ok() || !IsSuccess(exchange.response->status)) {
    return ResponseError("get", *ref.type, ref.ns, ref.name, exchange);
  }
  return ParseObject(*exchange.response, StrCat("get ", ref.ToString()));
}

absl::StatusOr<std::vector<Json>> KubeClient::List(const ResourceType& type, std::string_view ns,
                                                   std::string_view label_selector) {
  std::string path = CollectionPath(type, ns);
  if (!label_selector.empty()) {
    StrAppend(&path, "?labelSelector=", EscapeQueryValue(label_selector));
  }
  Exchange exchange = Send("GET", path, "");
  if (!exchange.response.ok() || !IsSuccess(exchange.response->status)) {
    return ResponseError("list", type, ns, "", exchange);
  }
  absl::StatusOr<Json> list = ParseObject(*exchange.response, StrCat("list ", type.plural));
  if (!list.ok()) return list.status();
  std::vector<Json> items;
  if (list->contains("items") && (*list)["items"].is_array()) {
    for (Json& item : (*list)["items"]) items.push_back(std::move(item));
  }
  return items;
}

absl::StatusOr<Json> KubeClient::Create(const ResourceType& type, std::string_view ns,
                                        const Json& object) {
  const std::string name = ObjectName(object);
  Exchange exchange = Send("POST", CollectionPath(type, ns), object.dump());
  if (!exchange.response.ok() || !IsSuccess(exchange.response->status)) {
    return ResponseError("create", type, ns, name, exchange);
  }
  return ParseObject(*exchange.response, StrCat("create ", Describe(type, ns, name)));
}

absl::StatusOr<Json> KubeClient::Update(const ObjectRef& ref, const Json& object) {
  if (ObjectName(object) != ref.name) {
    return absl::InvalidArgumentError(
        StrCat("update ", ref.ToString(), ": the object is named \"", ObjectName(object), "\""));
  }
  Exchange exchange = Send("PUT", ObjectPath(ref), object.dump());
  if (!exchange.response.ok() || !IsSuccess(exchange.response->status)) {
    return ResponseError("update", *ref.type, ref.ns, ref.name, exchange);
  }
  return ParseObject(*exchange.response, StrCat("update ", ref.ToString()));
}

absl::Status KubeClient::Delete(const ObjectRef& ref, bool now) {
  Exchange exchange =
      Send("DELETE", now ? StrCat(ObjectPath(ref), "?gracePeriodSeconds=0") : ObjectPath(ref), "");
  if (!exchange.response.ok() || !IsSuccess(exchange.response->status)) {
    return ResponseError("delete", *ref.type, ref.ns, ref.name, exchange);
  }
  return absl::OkStatus();
}

absl::StatusOr<MutateResult> KubeClient::Mutate(const ObjectRef& ref, const Mutation& mutate) {
  MutateResult result;
  while (true) {
    absl::StatusOr<Json> current = Get(ref);
    if (!current.ok()) return current.status();
    const std::string read_version = ResourceVersion(*current);
    Json updated = *current;
    absl::StatusOr<bool> changed = mutate(updated);
    if (!changed.ok()) return changed.status();
    if (!*changed) {
      result.object = *std::move(current);
      result.changed = false;
      return result;
    }
    // The version read is the precondition of the write, whatever the mutation did.
    updated["metadata"]["resourceVersion"] = read_version;
    absl::StatusOr<Json> written = Update(ref, updated);
    if (written.ok()) {
      result.object = *std::move(written);
      result.changed = true;
      return result;
    }
    if (written.status().code() != absl::StatusCode::kAborted) return written.status();
    ++result.conflicts;
    if (result.conflicts > options_.max_conflict_retries) {
      return absl::AbortedError(StrCat(
          "update ", ref.ToString(), ": gave up after ", result.conflicts,
          " conflicts; something else keeps changing it (", written.status().message(), ")"));
    }
    // Another writer got there first: read its version and apply the change to it.
    clock_.SleepFor(absl::Milliseconds(10) * result.conflicts);
  }
}

}  // namespace handoff::kube
