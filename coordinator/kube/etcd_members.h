// etcd's member list, as `etcdctl member list` reads it: through etcd's own HTTP gateway
// (POST /v3/cluster/member/list), over the HttpTransport the API client uses (libcurl, with the
// etcd client certificate kubeadm keeps for health checks, or any client certificate etcd's CA
// signed). The replace strategy reads it before it takes a leaving node out of the rollout
// (rollout/replacement.h): kubeadm names each stacked etcd member after its node.
#ifndef HANDOFF_COORDINATOR_KUBE_ETCD_MEMBERS_H_
#define HANDOFF_COORDINATOR_KUBE_ETCD_MEMBERS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fs/file_system.h"
#include "common/kube/http_transport.h"

namespace handoff::kube {

struct EtcdMember {
  std::string id;    // decimal, as the gateway sends the uint64 (etcdctl prints it in hex)
  std::string name;  // "" for a member added but not started yet
  std::vector<std::string> peer_urls;
  std::vector<std::string> client_urls;
  bool learner = false;
};

// The members in the gateway's JSON answer. InvalidArgument naming what is wrong when `body` is
// not that answer.
absl::StatusOr<std::vector<EtcdMember>> ParseEtcdMembers(std::string_view body);

// Asks the etcd `transport` reaches. Errors: the transport's; FailedPrecondition for an HTTP
// status other than 200 (with etcd's message), InvalidArgument for an answer that does not parse.
absl::StatusOr<std::vector<EtcdMember>> ListEtcdMembers(HttpTransport& transport);

// etcd's member list from whichever member answers, as an etcd client with auto-sync keeps its
// endpoints: the endpoint that answered last first, then the client URLs of the members of the last
// answer, then the endpoints it was given. A control plane replaced node by node keeps answering
// after the node it was first pointed at is gone. Thread-compatible.
class EtcdMemberLister {
 public:
  // A transport to one endpoint ("https://172.31.250.10:2379").
  using TransportFactory =
      std::function<absl::StatusOr<std::unique_ptr<HttpTransport>>(const std::string& endpoint)>;
  EtcdMemberLister(std::vector<std::string> endpoints, TransportFactory factory);

  // ListEtcdMembers from the first endpoint, in the order above, that answers; the last error,
  // naming every endpoint tried, when none does. The client URLs of the member named `last`
  // (in the last answer) are tried after every other endpoint: a node being removed is asked
  // about, and its own etcd, until it stops, answers from its own view of the cluster.
  absl::StatusOr<std::vector<EtcdMember>> List(const std::string& last = "");
  // In the order the next List(`last`) tries them.
  std::vector<std::string> Endpoints(const std::string& last = "") const;
  // The endpoint that answered the last List; "" before any did.
  const std::string& LastAnswered() const { return last_good_; }

 private:
  std::vector<std::string> given_;
  std::vector<EtcdMember> learned_;  // the members of the last answer
  std::string last_good_;
  TransportFactory factory_;
  std::map<std::string, std::unique_ptr<HttpTransport>> transports_;
};

// The endpoints of --etcd-endpoint: comma-separated http(s) URLs, a trailing '/' dropped.
// InvalidArgument naming one that is not such a URL, or for none.
absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(std::string_view list);

// The etcd client of the coordinator (--etcd-endpoint, --etcd-ca, --etcd-cert, --etcd-key): the
// endpoint's URL and the PEM files read. InvalidArgument naming the flag whose file cannot be
// read or is empty.
absl::StatusOr<ClusterCredentials> EtcdCredentials(const FileSystem& fs,
                                                   const std::string& endpoint,
                                                   const std::string& ca_file,
                                                   const std::string& cert_file,
                                                   const std::string& key_file);

}  // namespace handoff::kube

#endif  // HANDOFF_COORDINATOR_KUBE_ETCD_MEMBERS_H_
