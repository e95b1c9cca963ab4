#include "coordinator/kube/etcd_members.h"

#include <algorithm>
#include <utility>

#include "common/base/strings.h"
#include "common/kube/resource.h"

namespace handoff::kube {

absl::StatusOr<std::vector<EtcdMember>> ParseEtcdMembers(std::string_view body) {
  Json answer = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    return absl::InvalidArgumentError("etcd's member list is not a JSON object");
  }
  std::vector<EtcdMember> members;
  const auto list = answer.find("members");
  if (list == answer.end()) return members;  // proto3 JSON leaves an empty list out
  if (!list->is_array()) return absl::InvalidArgumentError("etcd's members are not a list");
  for (const Json& item : *list) {
    if (!item.is_object()) return absl::InvalidArgumentError("an etcd member is not an object");
    EtcdMember member;
    // uint64 in proto3 JSON is a string; etcd's gateway sends it so.
    const auto id = item.find("ID");
    if (id == item.end() || !(id->is_string() || id->is_number_unsigned())) {
      return absl::InvalidArgumentError("an etcd member has no ID");
    }
    member.id = id->is_string() ? id->get<std::string>() : std::to_string(id->get<uint64_t>());
    if (const auto name = item.find("name"); name != item.end() && name->is_string()) {
      member.name = name->get<std::string>();
    }
    for (const auto& [key, into] :
         {std::pair<const char*, std::vector<std::string>*>{"peerURLs", &member.peer_urls},
          {"clientURLs", &member.client_urls}}) {
      if (const auto urls = item.find(key); urls != item.end() && urls->is_array()) {
        for (const Json& url : *urls) {
          if (url.is_string()) into->push_back(url.get<std::string>());
        }
      }
    }
    if (const auto learner = item.find("isLearner");
        learner != item.end() && learner->is_boolean()) {
      member.learner = learner->get<bool>();
    }
    members.push_back(std::move(member));
  }
  return members;
}

absl::StatusOr<std::vector<EtcdMember>> ListEtcdMembers(HttpTransport& transport) {
  HttpRequest request;
  request.method = "POST";
  request.path = "/v3/cluster/member/list";
  request.body = "{}";
  request.timeout = absl::Seconds(10);
  absl::StatusOr<HttpResponse> response = transport.Send(request);
  if (!response.ok()) return response.status();
  if (response->status != 200) {
    return absl::FailedPreconditionError(
        StrCat("etcd answered the member list with HTTP ", response->status, ": ", response->body));
  }
  return ParseEtcdMembers(response->body);
}

EtcdMemberLister::EtcdMemberLister(std::vector<std::string> endpoints, TransportFactory factory)
    : given_(std::move(endpoints)), factory_(std::move(factory)) {}

std::vector<std::string> EtcdMemberLister::Endpoints(const std::string& last) const {
  std::vector<std::string> deferred;  // the client URLs of the member named `last`
  for (const EtcdMember& member : learned_) {
    if (!last.empty() && member.name == last) {
      deferred.insert(deferred.end(), member.client_urls.begin(), member.client_urls.end());
    }
  }
  std::vector<std::string> order;
  const auto add = [&](const std::string& endpoint, bool deferred_pass) {
    const bool is_deferred =
        std::find(deferred.begin(), deferred.end(), endpoint) != deferred.end();
    if (!endpoint.empty() && is_deferred == deferred_pass &&
        std::find(order.begin(), order.end(), endpoint) == order.end()) {
      order.push_back(endpoint);
    }
  };
  for (bool deferred_pass : {false, true}) {
    add(last_good_, deferred_pass);
    for (const EtcdMember& member : learned_) {
      for (const std::string& url : member.client_urls) add(url, deferred_pass);
    }
    for (const std::string& endpoint : given_) add(endpoint, deferred_pass);
  }
  return order;
}

absl::StatusOr<std::vector<EtcdMember>> EtcdMemberLister::List(const std::string& last) {
  const std::vector<std::string> order = Endpoints(last);
  absl::Status failed = absl::FailedPreconditionError("no etcd endpoint");
  for (const std::string& endpoint : order) {
    std::unique_ptr<HttpTransport>& transport = transports_[endpoint];
    if (transport == nullptr) {
      absl::StatusOr<std::unique_ptr<HttpTransport>> made = factory_(endpoint);
      if (!made.ok()) {
        failed = made.status();
        continue;
      }
      transport = *std::move(made);
    }
    absl::StatusOr<std::vector<EtcdMember>> members = ListEtcdMembers(*transport);
    if (!members.ok()) {
      failed = members.status();
      continue;
    }
    last_good_ = endpoint;
    learned_ = *members;
    return members;
  }
  return absl::Status(failed.code(), StrCat("no etcd endpoint answered (", StrJoin(order, ", "),
                                            "); the last: ", failed.message()));
}

absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(std::string_view list) {
  std::vector<std::string> endpoints;
  for (std::string_view part : StrSplit(list, ",", true)) {
    std::string endpoint(StripWhitespace(part));
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    if (endpoint.rfind("https://", 0) != 0 && endpoint.rfind("http://", 0) != 0) {
      return absl::InvalidArgumentError(
          StrCat("--etcd-endpoint ", part, " is not an http(s) URL (https://127.0.0.1:2379)"));
    }
    endpoints.push_back(std::move(endpoint));
  }
  if (endpoints.empty()) return absl::InvalidArgumentError("--etcd-endpoint names no endpoint");
  return endpoints;
}

absl::StatusOr<ClusterCredentials> EtcdCredentials(const FileSystem& fs,
                                                   const std::string& endpoint,
                                                   const std::string& ca_file,
                                                   const std::string& cert_file,
                                                   const std::string& key_file) {
  ClusterCredentials credentials;
  credentials.server = endpoint;
  while (!credentials.server.empty() && credentials.server.back() == '/') {
    credentials.server.pop_back();
  }
  if (credentials.server.rfind("https://", 0) != 0 && credentials.server.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError(
        StrCat("--etcd-endpoint ", endpoint, " is not an http(s) URL (https://127.0.0.1:2379)"));
  }
  auto read = [&fs](const char* flag, const std::string& file, std::string& out) -> absl::Status {
    if (file.empty()) return absl::OkStatus();
    absl::StatusOr<std::string> text = fs.ReadFile(file);
    if (!text.ok()) {
      return absl::InvalidArgumentError(
          StrCat(flag, " ", file, " cannot be read: ", text.status().message()));
    }
    if (text->empty()) return absl::InvalidArgumentError(StrCat(flag, " ", file, " is empty"));
    out = *std::move(text);
    return absl::OkStatus();
  };
  if (absl::Status status = read("--etcd-ca", ca_file, credentials.ca_pem); !status.ok()) {
    return status;
  }
  if (absl::Status status = read("--etcd-cert", cert_file, credentials.client_cert_pem);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = read("--etcd-key", key_file, credentials.client_key_pem);
      !status.ok()) {
    return status;
  }
  credentials.identity = "etcd client";
  return credentials;
}

}  // namespace handoff::kube
