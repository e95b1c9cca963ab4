// The kube-system objects kubeadm 1.26 creates that handoff reads, for a real API server that
// kubeadm did not set up: the kubeadm-config ConfigMap (a v1beta3 ClusterConfiguration on the
// in-tree AWS provider), the kubelet-config ConfigMap, and one Node per control-plane node with
// its AWS providerID. The bootstrap RBAC is not here: kube-apiserver creates it itself.
// Building the objects is pure; creating them goes through a KubeClient.
#ifndef HANDOFF_REHEARSAL_REAL_KUBEADM_OBJECTS_H_
#define HANDOFF_REHEARSAL_REAL_KUBEADM_OBJECTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/kube/client.h"
#include "common/kube/resource.h"

namespace handoff::sandbox::real {

struct ControlPlaneNode {
  std::string name;         // "ip-10-0-1-5.ec2.internal"; also its hostname
  std::string zone;         // "us-east-1a"
  std::string instance_id;  // "i-0123456789abcdef0"
  std::string internal_ip;  // "10.0.1.5"
};

struct KubeadmObjectsOptions {
  std::string kubernetes_version = "v1.26.13";
  std::string cluster_name = "kubernetes";
  std::string control_plane_endpoint = "127.0.0.1:6443";
  std::string pod_subnet = "192.168.0.0/16";
  std::string service_subnet = "10.96.0.0/12";
  std::vector<ControlPlaneNode> nodes;
};

// data.ClusterConfiguration as kubeadm 1.26 stores it (keys sorted as kubeadm writes them), with
// apiServer and controllerManager extraArgs cloud-provider: aws and the cloud-config volume.
std::string ClusterConfigurationYaml(const KubeadmObjectsOptions& options);
// ConfigMap kube-system/kubeadm-config.
kube::Json KubeadmConfigMap(const KubeadmObjectsOptions& options);
// ConfigMap kube-system/kubelet-config (data.kubelet, a KubeletConfiguration).
kube::Json KubeletConfigMap(const KubeadmObjectsOptions& options);
// The Node a kubelet with --cloud-provider=aws registers once the in-tree provider initialised
// it: labels (hostname, os, arch, the control-plane role, zone and region), the control-plane
// NoSchedule taint, spec.providerID aws:///<zone>/<instance-id>, status.addresses.
kube::Json ControlPlaneNodeObject(const ControlPlaneNode& node);

// Creates every object above as `admin` (a client with rights to create them). An object that
// exists already is an error (AlreadyExists, naming it): the objects are for a fresh cluster.
absl::Status CreateKubeadmObjects(kube::KubeClient& admin, const KubeadmObjectsOptions& options);

}  // namespace handoff::sandbox::real

#endif  // HANDOFF_REHEARSAL_REAL_KUBEADM_OBJECTS_H_
