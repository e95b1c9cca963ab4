#include "rehearsal/real/kubeadm_objects.h"

#include "common/base/strings.h"

namespace handoff::sandbox::real {
namespace {

using kube::Json;

// "us-east-1" from "us-east-1a": AWS zone names are the region plus one letter.
std::string RegionOfZone(const std::string& zone) {
  return zone.empty() ? zone : zone.substr(0, zone.size() - 1);
}

Json Metadata(const std::string& name, const std::string& ns) {
  Json metadata = Json::object();
  metadata["name"] = name;
  if (!ns.empty()) metadata["namespace"] = ns;
  return metadata;
}

}  // namespace

std::string ClusterConfigurationYaml(const KubeadmObjectsOptions& options) {
  return StrCat(
      "apiServer:\n"
      "  extraArgs:\n"
      "    authorization-mode: Node,RBAC\n"
      "    cloud-config: /etc/kubernetes/cloud.conf\n"
      "    cloud-provider: aws\n"
      "  extraVolumes:\n"
      "  - hostPath: /etc/kubernetes/cloud.conf\n"
      "    mountPath: /etc/kubernetes/cloud.conf\n"
      "    name: cloud-config\n"
      "    pathType: File\n"
      "    readOnly: true\n"
      "  timeoutForControlPlane: 4m0s\n"
      "apiVersion: kubeadm.k8s.io/v1beta3\n"
      "certificatesDir: /etc/kubernetes/pki\n"
      "clusterName: ",
      options.cluster_name,
      "\n"
      "controlPlaneEndpoint: ",
      options.control_plane_endpoint,
      "\n"
      "controllerManager:\n"
      "  extraArgs:\n"
      "    cloud-config: /etc/kubernetes/cloud.conf\n"
      "    cloud-provider: aws\n"
      "  extraVolumes:\n"
      "  - hostPath: /etc/kubernetes/cloud.conf\n"
      "    mountPath: /etc/kubernetes/cloud.conf\n"
      "    name: cloud-config\n"
      "    pathType: File\n"
      "    readOnly: true\n"
      "dns: {}\n"
      "etcd:\n"
      "  local:\n"
      "    dataDir: /var/lib/etcd\n"
      "imageRepository: registry.k8s.io\n"
      "kind: ClusterConfiguration\n"
      "kubernetesVersion: ",
      options.kubernetes_version,
      "\n"
      "networking:\n"
      "  dnsDomain: cluster.local\n"
      "  podSubnet: ",
      options.pod_subnet,
      "\n"
      "  serviceSubnet: ",
      options.service_subnet,
      "\n"
      "scheduler: {}\n");
}

Json KubeadmConfigMap(const KubeadmObjectsOptions& options) {
  Json config_map = Json::object();
  config_map["apiVersion"] = "v1";
  config_map["kind"] = "ConfigMap";
  config_map["metadata"] = Metadata("kubeadm-config", "kube-system");
  config_map["data"] = {{"ClusterConfiguration", ClusterConfigurationYaml(options)}};
  return config_map;
}

Json KubeletConfigMap(const KubeadmObjectsOptions& /*options*/) {
  Json config_map = Json::object();
  config_map["apiVersion"] = "v1";
  config_map["kind"] = "ConfigMap";
  config_map["metadata"] = Metadata("kubelet-config", "kube-system");
  config_map["data"] = {{"kubelet",
                         "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                         "authentication:\n"
                         "  anonymous:\n"
                         "    enabled: false\n"
                         "  webhook:\n"
                         "    enabled: true\n"
                         "  x509:\n"
                         "    clientCAFile: /etc/kubernetes/pki/ca.crt\n"
                         "authorization:\n"
                         "  mode: Webhook\n"
                         "cgroupDriver: systemd\n"
                         "clusterDNS:\n"
                         "- 10.96.0.10\n"
                         "clusterDomain: cluster.local\n"
                         "kind: KubeletConfiguration\n"
                         "rotateCertificates: true\n"
                         "staticPodPath: /etc/kubernetes/manifests\n"}};
  return config_map;
}

Json ControlPlaneNodeObject(const ControlPlaneNode& node) {
  Json object = Json::object();
  object["apiVersion"] = "v1";
  object["kind"] = "Node";
  object["metadata"] = Metadata(node.name, "");
  object["metadata"]["labels"] = {
      {"beta.kubernetes.io/arch", "amd64"},
      {"beta.kubernetes.io/os", "linux"},
      {"kubernetes.io/arch", "amd64"},
      {"kubernetes.io/hostname", node.name},
      {"kubernetes.io/os", "linux"},
      {"node-role.kubernetes.io/control-plane", ""},
      {"node.kubernetes.io/exclude-from-external-load-balancers", ""},
      {"topology.kubernetes.io/region", RegionOfZone(node.zone)},
      {"topology.kubernetes.io/zone", node.zone},
  };
  object["spec"] = {
      {"providerID", StrCat("aws:///", node.zone, "/", node.instance_id)},
      {"taints", Json::array({Json{{"key", "node-role.kubernetes.io/control-plane"},
                                   {"effect", "NoSchedule"}}})},
  };
  // Node status may be set on create (pkg/registry/core/node/strategy.go PrepareForCreate keeps
  // it), which is how the addresses the cloud provider found get there without a kubelet.
  object["status"] = {
      {"addresses", Json::array({Json{{"type", "InternalIP"}, {"address", node.internal_ip}},
                                 Json{{"type", "Hostname"}, {"address", node.name}},
                                 Json{{"type", "InternalDNS"}, {"address", node.name}}})},
  };
  return object;
}

absl::Status CreateKubeadmObjects(kube::KubeClient& admin, const KubeadmObjectsOptions& options) {
  for (const Json& config_map : {KubeadmConfigMap(options), KubeletConfigMap(options)}) {
    absl::StatusOr<Json> created = admin.Create(kube::kConfigMaps, "kube-system", config_map);
    if (!created.ok()) return created.status();
  }
  for (const ControlPlaneNode& node : options.nodes) {
    absl::StatusOr<Json> created = admin.Create(kube::kNodes, "", ControlPlaneNodeObject(node));
    if (!created.ok()) return created.status();
  }
  return absl::OkStatus();
}

}  // namespace handoff::sandbox::real
