// etcd's member list, as `etcdctl member list` reads it: through etcd's own HTTP gateway
// (POST /v3/cluster/member/list), over the HttpTransport the API client uses (libcurl, with the
// etcd client certificate kubeadm keeps for health checks, or any client certificate etcd's CA
// signed). The replace strategy reads it before it takes a leaving node out of the rollout
// (rollout/replacement.h): kubeadm names each stacked etcd member after its node.
#ifndef HANDOFF_COORDINATOR_KUBE_ETCD_MEMBERS_H_
#define HANDOFF_COORDINATOR_KUBE_ETCD_MEMBERS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/fs/file_system.h"
#include "coordinator/kube/http_transport.h"

namespace handoff::kube {

struct EtcdMember {
  std::string id;    // decimal, as the gateway sends the uint64 (etcdctl prints it in hex)
  std::string name;  // "" for a member added but not started yet
  std::vector<std::string> peer_urls;
  bool learner = false;
};

// The members in the gateway's JSON answer. InvalidArgument naming what is wrong when `body` is
// not that answer.
absl::StatusOr<std::vector<EtcdMember>> ParseEtcdMembers(std::string_view body);

// Asks the etcd `transport` reaches. Errors: the transport's; FailedPrecondition for an HTTP
// status other than 200 (with etcd's message), InvalidArgument for an answer that does not parse.
absl::StatusOr<std::vector<EtcdMember>> ListEtcdMembers(HttpTransport& transport);

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
