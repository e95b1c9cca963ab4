#include "coordinator/preflight/cluster_checks.h"

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "agent/manifest/flag_list.h"
#include "common/base/strings.h"

namespace handoff::preflight {
namespace {

using kube::Json;
using kube::StringAt;

constexpr char kKubeSystem[] = "kube-system";
constexpr char kKcm[] = "kube-controller-manager";
constexpr char kCcm[] = "cloud-controller-manager";
constexpr char kEbsCsiDriver[] = "ebs.csi.aws.com";
constexpr char kInTreeEbsProvisioner[] = "kubernetes.io/aws-ebs";

// ---------------------------------------------------------------- reading

std::optional<std::vector<Json>> ReadList(kube::KubeClient& client, const kube::ResourceType& type,
                                          ClusterView& view) {
  absl::StatusOr<std::vector<Json>> items = client.List(type, "");
  if (!items.ok()) {
    view.unread[std::string(type.plural)] = std::string(items.status().message());
    return std::nullopt;
  }
  return *std::move(items);
}

// The user and groups the API server sees for a subject.
std::pair<std::string, std::vector<std::string>> Requester(const kube::Subject& subject) {
  if (subject.kind == "ServiceAccount") {
    return {StrCat("system:serviceaccount:", subject.ns, ":", subject.name),
            {"system:serviceaccounts", StrCat("system:serviceaccounts:", subject.ns),
             "system:authenticated"}};
  }
  if (subject.kind == "Group") return {"", {subject.name, "system:authenticated"}};
  return {subject.name, {"system:authenticated"}};
}

struct Question {
  kube::Subject subject;
  std::string verb;
  std::string lease;  // "" for create (a create request names no object)
};

std::vector<Question> Questions(const ClusterCheckOptions& options) {
  const kube::Subject kcm{"User", "system:kube-controller-manager", ""};
  std::vector<Question> questions;
  auto ask = [&](const kube::Subject& subject, const std::string& lease) {
    for (const char* verb : {"get", "update"}) {
      bool asked = false;
      for (const Question& q : questions) {
        asked = asked ||
                (q.subject.ToString() == subject.ToString() && q.verb == verb && q.lease == lease);
      }
      if (!asked) questions.push_back(Question{subject, verb, lease});
    }
  };
  ask(kcm, options.rbac.migration_lease);
  ask(options.rbac.ccm_subject, options.rbac.migration_lease);
  ask(options.rbac.ccm_subject, options.rbac.ccm_main_lease);
  for (const kube::Subject& subject : {kcm, options.rbac.ccm_subject}) {
    bool asked = false;
    for (const Question& q : questions) {
      asked = asked || (q.subject.ToString() == subject.ToString() && q.verb == "create");
    }
    if (!asked) questions.push_back(Question{subject, "create", ""});
  }
  return questions;
}

AccessAnswer Ask(kube::KubeClient& client, const Question& question, const std::string& ns) {
  AccessAnswer answer{question.subject.ToString(), question.verb, question.lease, false, ""};
  const auto [user, groups] = Requester(question.subject);
  Json review = Json::object();
  review["apiVersion"] = "authorization.k8s.io/v1";
  review["kind"] = "SubjectAccessReview";
  Json spec = Json::object();
  if (!user.empty()) spec["user"] = user;
  spec["groups"] = groups;
  Json attributes = Json::object();
  attributes["namespace"] = ns;
  attributes["verb"] = question.verb;
  attributes["group"] = "coordination.k8s.io";
  attributes["resource"] = "leases";
  if (!question.lease.empty()) attributes["name"] = question.lease;
  spec["resourceAttributes"] = attributes;
  review["spec"] = spec;
  absl::StatusOr<Json> reviewed = client.Create(kube::kSubjectAccessReviews, "", review);
  if (!reviewed.ok()) {
    answer.error = std::string(reviewed.status().message());
  } else if (!reviewed->contains("status") || !(*reviewed)["status"].contains("allowed") ||
             !(*reviewed)["status"]["allowed"].is_boolean()) {
    answer.error = "the API server's SubjectAccessReview has no status.allowed";
  } else {
    answer.allowed = (*reviewed)["status"]["allowed"].get<bool>();
  }
  return answer;
}

// ---------------------------------------------------------------- pods

std::string PodName(const Json& pod) {
  return StrCat(kube::ObjectNamespace(pod), "/", kube::ObjectName(pod));
}

std::string NodeOf(const Json& pod) { return StringAt(pod, {"spec", "nodeName"}); }

// object[key] when it is an object, else an empty object; never a temporary.
const Json& Field(const Json& object, const char* key) {
  static const Json kEmpty = Json::object();
  return object.is_object() && object.contains(key) && object[key].is_object() ? object[key]
                                                                               : kEmpty;
}

// object[key] when it is an array, else an empty array.
const Json& Items(const Json& object, const char* key) {
  static const Json kEmpty = Json::array();
  return object.is_object() && object.contains(key) && object[key].is_array() ? object[key]
                                                                              : kEmpty;
}

// The control-plane component a kube-system pod runs ("" when none): its `component` label as
// kubeadm and RKE2 set it, else its mirror pod's name "<component>-<node>".
std::string ComponentOf(const Json& pod) {
  if (kube::ObjectNamespace(pod) != kKubeSystem) return "";
  const std::string label = StringAt(pod, {"metadata", "labels", "component"});
  if (!label.empty()) return label;
  const std::string name = kube::ObjectName(pod);
  const std::string node = NodeOf(pod);
  for (const char* component : {"kube-apiserver", kKcm, kCcm, "kube-scheduler", "etcd"}) {
    if (!node.empty() && name == StrCat(component, "-", node)) return component;
  }
  return "";
}

// The first container's command and args, as the flags the process parses.
FlagList ContainerFlags(const Json& pod) {
  std::vector<std::string> items;
  const Json& containers = Items(Field(pod, "spec"), "containers");
  if (!containers.empty()) {
    for (const char* key : {"command", "args"}) {
      for (const Json& item : Items(containers[0], key)) {
        if (item.is_string()) items.push_back(item.get<std::string>());
      }
    }
  }
  return FlagList(std::move(items));
}

std::vector<const Json*> PodsOf(const ClusterView& view, const std::string& component) {
  std::vector<const Json*> pods;
  if (!view.pods) return pods;
  for (const Json& pod : *view.pods) {
    if (ComponentOf(pod) == component) pods.push_back(&pod);
  }
  return pods;
}

bool ConditionTrue(const Json& object, std::string_view type) {
  for (const Json& condition : Items(Field(object, "status"), "conditions")) {
    if (StringAt(condition, {"type"}) == type) return StringAt(condition, {"status"}) == "True";
  }
  return false;
}

CheckResult Unreadable(const char* name, const ClusterView& view,
                       std::initializer_list<const char*> resources) {
  CheckResult result{name, Verdict::kWarn, {}, ""};
  for (const char* resource : resources) {
    auto it = view.unread.find(resource);
    if (it != view.unread.end()) {
      result.evidence.push_back(StrCat("cannot list ", resource, ": ", it->second));
    }
  }
  result.action =
      "run preflight with a kubeconfig allowed to list these (cluster-admin, e.g. "
      "/etc/kubernetes/admin.conf)";
  return result;
}

// ---------------------------------------------------------------- checks

CheckResult CheckRbac(const ClusterView& view, const ClusterCheckOptions& options) {
  CheckResult result{kCheckRbac, Verdict::kOk, {}, ""};
  if (options.downtime) {
    result.evidence.push_back("not needed: the downtime strategy uses no Leader Migration");
    return result;
  }
  std::vector<std::string> denied, errors;
  std::map<std::string, std::vector<std::string>> allowed;  // identity → "verb lease"
  for (const AccessAnswer& answer : view.access) {
    const std::string what = answer.lease.empty()
                                 ? StrCat(answer.verb, " leases")
                                 : StrCat(answer.verb, " lease ", kKubeSystem, "/", answer.lease);
    if (!answer.error.empty()) {
      errors.push_back(StrCat(answer.identity, ", ", what, ": ", answer.error));
    } else if (!answer.allowed) {
      denied.push_back(StrCat(answer.identity, " may not ", what));
    } else {
      allowed[answer.identity].push_back(what);
    }
  }
  if (!denied.empty()) {
    result.verdict = Verdict::kFail;
    result.evidence = denied;
    result.action =
        "run `handoffctl rbac apply` (it appends the rules both managers need to use "
        "the migration lease; `handoffctl rbac plan` shows them first)";
  } else if (!errors.empty() || view.access.empty()) {
    result.verdict = Verdict::kWarn;
    result.evidence = errors;
    if (view.access.empty()) result.evidence.push_back("no SubjectAccessReview was answered");
    result.action =
        "run preflight as a user allowed to create subjectaccessreviews, or check "
        "with `kubectl auth can-i update leases/<name> -n kube-system --as <user>`";
  } else {
    for (const auto& [identity, whats] : allowed) {
      result.evidence.push_back(StrCat(identity, " may ", StrJoin(whats, ", ")));
    }
  }
  return result;
}

CheckResult CheckEbsCsi(const ClusterView& view) {
  if (!view.persistent_volumes || !view.storage_classes || !view.csi_drivers) {
    return Unreadable(kCheckEbsCsi, view, {"persistentvolumes", "storageclasses", "csidrivers"});
  }
  std::vector<std::string> in_tree;
  for (const Json& pv : *view.persistent_volumes) {
    if (pv.contains("spec") && pv["spec"].contains("awsElasticBlockStore")) {
      in_tree.push_back(StrCat("PersistentVolume ", kube::ObjectName(pv), " (awsElasticBlockStore ",
                               StringAt(pv, {"spec", "awsElasticBlockStore", "volumeID"}), ")"));
    }
  }
  for (const Json& sc : *view.storage_classes) {
    if (StringAt(sc, {"provisioner"}) == kInTreeEbsProvisioner) {
      in_tree.push_back(StrCat("StorageClass ", kube::ObjectName(sc), " (provisioner ",
                               kInTreeEbsProvisioner, ")"));
    }
  }
  bool driver = false;
  for (const Json& csi : *view.csi_drivers)
    driver = driver || kube::ObjectName(csi) == kEbsCsiDriver;
  CheckResult result{kCheckEbsCsi, Verdict::kOk, {}, ""};
  if (in_tree.empty()) {
    result.evidence.push_back("no PersistentVolume or StorageClass uses the in-tree EBS plugin");
  } else if (driver) {
    result.evidence.push_back(StrCat(in_tree.size(), " in-tree EBS volume",
                                     in_tree.size() == 1 ? "" : "s", " and classes, served by ",
                                     "CSIDriver ", kEbsCsiDriver, " through CSI migration"));
  } else {
    result.verdict = Verdict::kFail;
    for (std::string& line : in_tree) {
      result.evidence.push_back(
          StrCat(line, " uses the in-tree EBS plugin, and there is no CSIDriver ", kEbsCsiDriver));
    }
    result.action = StrCat("install the AWS EBS CSI driver (CSIDriver ", kEbsCsiDriver,
                           ") before any kubelet or kube-controller-manager runs with "
                           "--cloud-provider=external: without it these volumes stop attaching");
  }
  return result;
}

bool IsEcrHost(std::string_view host) {
  // <account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]
  const std::vector<std::string_view> labels = StrSplit(host, ".");
  if (labels.size() < 6) return false;
  if (labels[0].size() != 12 || !std::all_of(labels[0].begin(), labels[0].end(),
                                             [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  if (labels[1] != "dkr" || (labels[2] != "ecr" && labels[2] != "ecr-fips")) return false;
  if (labels[3].empty() || labels[4] != "amazonaws" || labels[5] != "com") return false;
  return labels.size() == 6 || (labels.size() == 7 && labels[6] == "cn");
}

CheckResult CheckEcrCredentials(const ClusterView& view, const ClusterCheckOptions& options) {
  if (!view.pods) return Unreadable(kCheckEcrCredentials, view, {"pods"});
  // node → the pods pulling from ECR there, with one image each.
  std::map<std::string, std::vector<std::string>> by_node;
  for (const Json& pod : *view.pods) {
    const Json& spec = Field(pod, "spec");
    std::string image;
    for (const char* key : {"initContainers", "containers", "ephemeralContainers"}) {
      for (const Json& container : Items(spec, key)) {
        const std::string candidate = StringAt(container, {"image"});
        if (image.empty() && IsEcrImage(candidate)) image = candidate;
      }
    }
    if (!image.empty())
      by_node[NodeOf(pod)].push_back(StrCat("Pod ", PodName(pod), " (", image, ")"));
  }
  CheckResult result{kCheckEcrCredentials, Verdict::kOk, {}, ""};
  if (by_node.empty()) {
    result.evidence.push_back("no pod pulls an image from Amazon ECR");
    return result;
  }
  std::vector<std::string> failing, unknown, fine;
  std::set<std::string> by_move;  // the workers whose agents' moves give the flags
  for (const auto& [node, pods] : by_node) {
    auto kubelet = options.kubelets.find(node);
    for (const std::string& pod : pods) {
      if (node.empty()) {
        unknown.push_back(
            StrCat(pod, ": not scheduled yet; its node's kubelet must pull from ECR"));
      } else if (kubelet == options.kubelets.end()) {
        unknown.push_back(StrCat(pod, " on ", node, ": the kubelet's flags there are not known"));
      } else if ((!kubelet->second.credential_provider_config ||
                  !kubelet->second.credential_provider_bin_dir) &&
                 kubelet->second.move_writes_flags) {
        // The worker's move writes both flags, and refuses without the provider.
        if (kubelet->second.provider_installed) {
          fine.push_back(pod);
          by_move.insert(node);
        } else {
          failing.push_back(StrCat(pod, " on ", node, ": its agent's move gives the kubelet the "
                                   "credential provider, and ", kubelet->second.provider_dir,
                                   "/ecr-credential-provider is not installed (the move refuses)"));
        }
      } else if (!kubelet->second.credential_provider_config ||
                 !kubelet->second.credential_provider_bin_dir) {
        failing.push_back(StrCat(pod, " on ", node, ": the kubelet has no ",
                                 !kubelet->second.credential_provider_config
                                     ? "--image-credential-provider-config"
                                     : "--image-credential-provider-bin-dir"));
      } else {
        fine.push_back(pod);
      }
    }
  }
  if (!failing.empty()) {
    result.verdict = Verdict::kFail;
    result.evidence = failing;
    result.evidence.insert(result.evidence.end(), unknown.begin(), unknown.end());
    result.action =
        "give every kubelet --image-credential-provider-config and "
        "--image-credential-provider-bin-dir naming the ecr-credential-provider "
        "before it runs with --cloud-provider=external: the in-tree ECR credentials "
        "go with --cloud-provider=aws, and these images stop pulling (on a worker whose agent "
        "moves the kubelet, install ecr-credential-provider in its "
        "worker.credentialProviderBinDir: the move writes the flags)";
  } else if (!unknown.empty()) {
    result.verdict = Verdict::kWarn;
    result.evidence = unknown;
    result.action =
        "check each such node's kubelet for --image-credential-provider-config and "
        "--image-credential-provider-bin-dir (the agents report the control-plane "
        "nodes' kubelets: run preflight with --coordinator)";
  } else {
    result.evidence.push_back(StrCat(fine.size(), " pod", fine.size() == 1 ? "" : "s",
                                     " pull from ECR, on nodes whose kubelets run the ECR "
                                     "credential provider",
                                     by_move.empty() ? "" : " or whose agents' moves give it them",
                                     by_move.empty() ? "" : StrCat(" (", by_move.size(),
                                     by_move.size() == 1 ? " worker" : " workers",
                                     ", ecr-credential-provider installed)")));
  }
  return result;
}

// Whether a manager writes VPC routes, and for which pod CIDR.
struct Routes {
  bool on = false;
  std::string cidr;
  bool operator==(const Routes& other) const {
    return on == other.on && (!on || cidr == other.cidr);
  }
};

std::string Describe(const Routes& routes) {
  return routes.on ? StrCat("writes VPC routes for --cluster-cidr=", routes.cidr)
                   : std::string("writes no VPC routes");
}

// The cloud-controller-manager handoff writes from `settings` (agent/engine/ccm_template.cc):
// configureCloudRoutes and clusterCIDR, unless extraArgs sets the flags.
Routes SettingsRoutes(const Settings& settings) {
  Routes routes{settings.ccm.configure_cloud_routes, settings.ccm.cluster_cidr};
  auto extra = settings.ccm.extra_args.find("configure-cloud-routes");
  if (extra != settings.ccm.extra_args.end()) routes.on = extra->second != "false";
  auto cidr = settings.ccm.extra_args.find("cluster-cidr");
  if (cidr != settings.ccm.extra_args.end()) routes.cidr = cidr->second;
  return routes;
}

CheckResult CheckCloudRoutes(const ClusterView& view, const ClusterCheckOptions& options) {
  if (!view.pods) return Unreadable(kCheckCloudRoutes, view, {"pods"});
  CheckResult result{kCheckCloudRoutes, Verdict::kOk, {}, ""};
  // The in-tree kube-controller-managers: routes need --allocate-node-cidrs and
  // --configure-cloud-routes (default true).
  std::map<std::tuple<bool, std::string>, std::vector<std::string>> kcm_routes;
  for (const Json* pod : PodsOf(view, kKcm)) {
    const FlagList flags = ContainerFlags(*pod);
    if (flags.Get("cloud-provider").value_or("") == "external") continue;
    Routes routes{flags.Get("allocate-node-cidrs").value_or("false") == "true" &&
                      flags.Get("configure-cloud-routes").value_or("true") != "false",
                  flags.Get("cluster-cidr").value_or("")};
    if (!routes.on) routes.cidr.clear();
    kcm_routes[{routes.on, routes.cidr}].push_back(kube::ObjectName(*pod));
  }
  if (kcm_routes.empty()) {
    result.evidence.push_back(
        "no kube-controller-manager pod runs the in-tree provider: nothing to carry over");
    return result;
  }
  if (kcm_routes.size() > 1) {
    result.verdict = Verdict::kFail;
    for (const auto& [key, pods] : kcm_routes) {
      result.evidence.push_back(
          StrCat(StrJoin(pods, ", "), ": ", Describe(Routes{std::get<0>(key), std::get<1>(key)})));
    }
    result.action =
        "make every kube-controller-manager's --allocate-node-cidrs, "
        "--configure-cloud-routes and --cluster-cidr the same first";
    return result;
  }
  const Routes reference{std::get<0>(kcm_routes.begin()->first),
                         std::get<1>(kcm_routes.begin()->first)};
  const std::string kcm_says =
      StrCat("the kube-controller-manager (", StrJoin(kcm_routes.begin()->second, ", "), ") ",
             Describe(reference));
  const Routes planned = SettingsRoutes(options.settings);
  std::vector<std::string> wrong;
  if (!(planned == reference)) {
    wrong.push_back(
        StrCat("the cloud-controller-manager handoff would write (the settings' "
               "cloudControllerManager) ",
               Describe(planned)));
  }
  for (const Json* pod : PodsOf(view, kCcm)) {
    const FlagList flags = ContainerFlags(*pod);
    Routes running{flags.Get("configure-cloud-routes").value_or("true") != "false",
                   flags.Get("cluster-cidr").value_or("")};
    if (!(running == reference)) {
      wrong.push_back(StrCat("Pod ", PodName(*pod), " ", Describe(running)));
    }
  }
  result.evidence.push_back(kcm_says);
  if (wrong.empty()) {
    result.evidence.push_back("the cloud-controller-manager does the same");
    return result;
  }
  result.verdict = Verdict::kFail;
  result.evidence.insert(result.evidence.end(), wrong.begin(), wrong.end());
  result.action =
      reference.on
          ? StrCat("set cloudControllerManager.configureCloudRoutes: true and clusterCIDR: ",
                   reference.cidr,
                   " in the settings, so that the routes the kube-controller-manager keeps are "
                   "kept after the move")
          : std::string(
                "leave cloudControllerManager.configureCloudRoutes false (and no "
                "configure-cloud-routes in extraArgs): the cloud-controller-manager would "
                "write VPC routes the kube-controller-manager never wrote");
  return result;
}

CheckResult CheckLeaderElect(const ClusterView& view, const ClusterCheckOptions& options) {
  if (!view.pods) return Unreadable(kCheckLeaderElect, view, {"pods"});
  CheckResult result{kCheckLeaderElect, Verdict::kOk, {}, ""};
  std::vector<std::string> off;
  size_t managers = 0;
  for (const char* component : {kKcm, kCcm}) {
    for (const Json* pod : PodsOf(view, component)) {
      ++managers;
      if (ContainerFlags(*pod).Get("leader-elect").value_or("true") == "false") {
        off.push_back(
            StrCat("Pod ", PodName(*pod), " runs ", component, " with --leader-elect=false"));
      }
    }
  }
  auto extra = options.settings.ccm.extra_args.find("leader-elect");
  if (extra != options.settings.ccm.extra_args.end() && extra->second == "false") {
    off.push_back("the settings' cloudControllerManager.extraArgs sets leader-elect: \"false\"");
  }
  if (!off.empty()) {
    result.verdict = Verdict::kFail;
    result.evidence = off;
    result.action =
        "remove --leader-elect=false: Leader Migration needs leader election (without "
        "it the manager ignores Leader Migration and every replica runs the cloud "
        "controllers)";
  } else if (managers == 0) {
    result.verdict = Verdict::kWarn;
    result.evidence.push_back(
        "no kube-controller-manager or cloud-controller-manager pod in kube-system: their flags "
        "cannot be read from the cluster");
    result.action = "check --leader-elect on each manager by hand (RKE runs them outside pods)";
  } else {
    result.evidence.push_back(
        StrCat(managers, " controller manager pod", managers == 1 ? "" : "s", " elect a leader"));
  }
  return result;
}

std::string PodProblem(const Json& pod) {
  const std::string phase = StringAt(pod, {"status", "phase"});
  if (phase == "Running" && ConditionTrue(pod, "Ready")) return "";
  std::string why = phase.empty() ? std::string("no phase reported") : StrCat("phase ", phase);
  for (const Json& status : Items(Field(pod, "status"), "containerStatuses")) {
    const std::string waiting = StringAt(status, {"state", "waiting", "reason"});
    if (!waiting.empty()) StrAppend(&why, ", ", StringAt(status, {"name"}), " ", waiting);
  }
  if (phase == "Running") StrAppend(&why, ", not Ready");
  return why;
}

CheckResult CheckControlPlane(const ClusterView& view) {
  if (!view.nodes || !view.pods) return Unreadable(kCheckControlPlane, view, {"nodes", "pods"});
  CheckResult result{kCheckControlPlane, Verdict::kOk, {}, ""};
  std::vector<std::string> nodes;
  std::vector<std::string> problems;
  for (const Json& node : *view.nodes) {
    const Json& labels = Field(Field(node, "metadata"), "labels");
    if (!labels.contains("node-role.kubernetes.io/control-plane") &&
        !labels.contains("node-role.kubernetes.io/master")) {
      continue;
    }
    nodes.push_back(kube::ObjectName(node));
    if (!ConditionTrue(node, "Ready")) {
      problems.push_back(StrCat("Node ", kube::ObjectName(node), " is not Ready"));
    }
  }
  if (nodes.empty()) {
    result.verdict = Verdict::kWarn;
    result.evidence.push_back("no Node is labelled node-role.kubernetes.io/control-plane");
    result.action = "label the control-plane nodes (kubeadm does) so that their health is checked";
    return result;
  }
  // node → component → pod
  std::map<std::string, std::map<std::string, const Json*>> pods;
  bool stacked_etcd = false;
  size_t seen = 0;
  for (const Json& pod : *view.pods) {
    const std::string component = ComponentOf(pod);
    if (component.empty() || std::find(nodes.begin(), nodes.end(), NodeOf(pod)) == nodes.end()) {
      continue;
    }
    pods[NodeOf(pod)][component] = &pod;
    stacked_etcd = stacked_etcd || component == "etcd";
    ++seen;
  }
  if (seen == 0) {
    result.verdict = Verdict::kWarn;
    result.evidence.push_back(StrCat("no control-plane pod runs on ", StrJoin(nodes, ", "),
                                     ": the components do not run as static pods here"));
    result.action = "check the control plane's health by hand (RKE runs it outside pods)";
    return result;
  }
  for (const std::string& node : nodes) {
    std::vector<std::string> expected = {"kube-apiserver", kKcm, "kube-scheduler"};
    if (stacked_etcd) expected.push_back("etcd");
    for (const std::string& component : expected) {
      if (pods[node].count(component) == 0) {
        problems.push_back(StrCat("no ", component, " pod on ", node));
      }
    }
    for (const auto& [component, pod] : pods[node]) {
      const std::string problem = PodProblem(*pod);
      if (!problem.empty()) problems.push_back(StrCat("Pod ", PodName(*pod), ": ", problem));
    }
  }
  if (!problems.empty()) {
    result.verdict = Verdict::kFail;
    result.evidence = problems;
    result.action =
        "bring the control plane back to health before anything moves (a move "
        "restarts its managers; an unhealthy member makes that an outage)";
  } else {
    result.evidence.push_back(
        StrCat(nodes.size(), " control-plane node", nodes.size() == 1 ? "" : "s", " Ready, ", seen,
               " control-plane pods Running and Ready", stacked_etcd ? " (etcd stacked)" : ""));
  }
  return result;
}

}  // namespace

bool IsEcrImage(std::string_view image) {
  const size_t slash = image.find('/');
  if (slash == std::string_view::npos) return false;
  return IsEcrHost(image.substr(0, slash));
}

ClusterView ReadClusterView(kube::KubeClient& client, const ClusterCheckOptions& options) {
  ClusterView view;
  view.nodes = ReadList(client, kube::kNodes, view);
  view.pods = ReadList(client, kube::kPods, view);
  view.persistent_volumes = ReadList(client, kube::kPersistentVolumes, view);
  view.storage_classes = ReadList(client, kube::kStorageClasses, view);
  view.csi_drivers = ReadList(client, kube::kCsiDrivers, view);
  if (!options.downtime) {
    for (const Question& question : Questions(options)) {
      view.access.push_back(Ask(client, question, options.rbac.ns));
    }
  }
  return view;
}

std::vector<CheckResult> RunClusterChecks(const ClusterView& view,
                                          const ClusterCheckOptions& options) {
  return {CheckRbac(view, options),           CheckEbsCsi(view),
          CheckEcrCredentials(view, options), CheckCloudRoutes(view, options),
          CheckLeaderElect(view, options),    CheckControlPlane(view)};
}

}  // namespace handoff::preflight
