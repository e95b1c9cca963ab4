// The simulated kubelet's heartbeat, for the model sandbox's workers, whose moves the agent proves
// by the Node's Lease renewed after the kubelet's restart (agent/verify/worker_proof.h): the
// Lease kube-node-lease/<node> (the kubelet's nodelease controller: holderIdentity the node's
// name, leaseDurationSeconds 40, spec.renewTime in microseconds) created when absent and renewed
// every `renew_interval` (the real kubelet's is 10 s, a quarter of the duration) with the
// credentials of --kubeconfig, from a thread of its own. A failed renewal is logged and tried
// again at the next tick, as the real controller retries.
#ifndef HANDOFF_REHEARSAL_KUBELET_NODE_HEARTBEAT_H_
#define HANDOFF_REHEARSAL_KUBELET_NODE_HEARTBEAT_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "common/kube/client.h"
#include "common/system/clock.h"

namespace handoff::sandbox {

class NodeHeartbeat {
 public:
  // Reads the kubeconfig at `kubeconfig` (a path of the node, read through `fs`; an error naming
  // it when it cannot be used), then renews at once and every `renew_interval` until destroyed.
  static absl::StatusOr<std::unique_ptr<NodeHeartbeat>> Start(const FileSystem& fs,
                                                              const std::string& kubeconfig,
                                                              const std::string& node_name,
                                                              absl::Duration renew_interval);
  ~NodeHeartbeat();
  NodeHeartbeat(const NodeHeartbeat&) = delete;
  NodeHeartbeat& operator=(const NodeHeartbeat&) = delete;

 private:
  NodeHeartbeat(std::string node_name, absl::Duration renew_interval)
      : node_name_(std::move(node_name)), renew_interval_(renew_interval) {}
  absl::Status Renew();
  void Loop();

  const std::string node_name_;
  const absl::Duration renew_interval_;
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<kube::KubeClient> client_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace handoff::sandbox

#endif  // HANDOFF_REHEARSAL_KUBELET_NODE_HEARTBEAT_H_
