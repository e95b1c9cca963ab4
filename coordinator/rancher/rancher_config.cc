#include "coordinator/rancher/rancher_config.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff::rancher {
namespace {

constexpr char kControlPlaneRoleLabel[] = "rke.cattle.io/control-plane-role";
constexpr char kKcmArgKey[] = "kube-controller-manager-arg";
constexpr char kKcmLeaderMigrationArg[] = "enable-leader-migration";
constexpr char kCcmLeaderMigrationArg[] = "--enable-leader-migration=true";
constexpr char kChartName[] = "aws-cloud-controller-manager";
constexpr char kManifestField[] = "spec.rkeConfig.additionalManifest";

// The aws-cloud-controller-manager chart, checked field by field against Rancher's "Setting up the
// Amazon Cloud Provider" (rancher/rancher-docs at 88ad31de, docs/how-to-guides/new-user-guides/
// kubernetes-clusters-in-rancher-setup/set-up-cloud-providers/amazon.md: "Using the Out-of-Tree AWS
// Cloud Provider" for RKE2's additionalManifest, "Helm Chart Installation from CLI" for RKE's
// values) and against the chart's own defaults (kubernetes/cloud-provider-aws at 63ec440c, chart
// 0.0.11: charts/aws-cloud-controller-manager/values.yaml and templates/daemonset.yaml). Helm
// merges maps from the values given into the chart's defaults, but a list replaces the default.
//
// RKE2: the HelmChart as the guide writes it (name, namespace and targetNamespace kube-system, the
// chart's repo, bootstrap: true (helm-controller installs it before the nodes are ready), host
// networking, args --configure-cloud-routes=false --v=5 --cloud-provider=aws, nodeSelector
// node-role.kubernetes.io/control-plane "true", the label RKE2 puts on control-plane nodes, which
// replaces the chart's default value ""), plus --enable-leader-migration=true for the migration
// (Rancher's "Migrating Amazon In-tree to Out-of-tree") and a tolerations list the guide leaves
// out. Rancher taints an RKE2 machine that has no worker role with
// node-role.kubernetes.io/control-plane:NoSchedule and, when it is an etcd machine too,
// node-role.kubernetes.io/etcd:NoExecute, both without a value (rancher/rancher,
// pkg/capr/planner/planner.go, getTaints). The chart's default tolerations cover the first but
// not the second, so on a dedicated etcd+control-plane pool the DaemonSet would place no pod.
// `operator: Exists` matches those taints with or without a value (the guide's Helm values write
// value 'true'); the uninitialized toleration repeats the chart's, since the list replaces it.
// kRke2Chart holds the same list (the test DeployCcmAddsTheChartRancherDocuments compares them);
// deploy-ccm gives it to a chart already in additionalManifest that has none.
constexpr char kRke2Tolerations[] =
    "- effect: NoSchedule\n"
    "  key: node.cloudprovider.kubernetes.io/uninitialized\n"
    "  value: \"true\"\n"
    "- effect: NoSchedule\n"
    "  key: node-role.kubernetes.io/control-plane\n"
    "  operator: Exists\n"
    "- effect: NoExecute\n"
    "  key: node-role.kubernetes.io/etcd\n"
    "  operator: Exists\n";

constexpr char kRke2Chart[] =
    "apiVersion: helm.cattle.io/v1\n"
    "kind: HelmChart\n"
    "metadata:\n"
    "  name: aws-cloud-controller-manager\n"
    "  namespace: kube-system\n"
    "spec:\n"
    "  chart: aws-cloud-controller-manager\n"
    "  repo: https://kubernetes.github.io/cloud-provider-aws\n"
    "  targetNamespace: kube-system\n"
    "  bootstrap: true\n"
    "  valuesContent: |-\n"
    "    hostNetworking: true\n"
    "    nodeSelector:\n"
    "      node-role.kubernetes.io/control-plane: \"true\"\n"
    "    tolerations:\n"
    "      - effect: NoSchedule\n"
    "        key: node.cloudprovider.kubernetes.io/uninitialized\n"
    "        value: \"true\"\n"
    "      - effect: NoSchedule\n"
    "        key: node-role.kubernetes.io/control-plane\n"
    "        operator: Exists\n"
    "      - effect: NoExecute\n"
    "        key: node-role.kubernetes.io/etcd\n"
    "        operator: Exists\n"
    "    args:\n"
    "      - --configure-cloud-routes=false\n"
    "      - --v=5\n"
    "      - --cloud-provider=aws\n"
    "      - --enable-leader-migration=true\n";

// RKE: the guide's values.yaml for RKE (host networking; nodeSelector
// node-role.kubernetes.io/controlplane 'true', RKE's label; tolerations of the uninitialized taint
// and of RKE's controlplane taint; args --configure-cloud-routes=false
// --use-service-account-credentials=true --v=2 --cloud-provider=aws; clusterRoleRules), with three
// changes:
// - nodeSelector also sets the chart's default key node-role.kubernetes.io/control-plane to null,
//   which makes Helm delete it ("Deleting a default key", helm.sh's chart_template_guide/
//   values_files): RKE nodes do not carry that label, and the guide has the operator edit the
//   DaemonSet to remove it after installing.
// - tolerations add RKE's etcd taint (node-role.kubernetes.io/etcd=true:NoExecute, which RKE puts
//   with the controlplane taint on a node without the worker role; rancher/rke,
//   cluster/reconcile.go, unschedulableEtcdTaint), or a controlplane+etcd node gets no pod.
// - clusterRoleRules are the guide's (the chart's rules with `get` on serviceaccounts, which
//   --use-service-account-credentials needs at startup) plus the tokenreviews and
//   subjectaccessreviews rules the chart's defaults gained after the guide was written: the list
//   replaces the chart's, and would otherwise drop them.
constexpr char kRkeHelmValues[] =
    "hostNetworking: true\n"
    "nodeSelector:\n"
    "  node-role.kubernetes.io/controlplane: \"true\"\n"
    "  node-role.kubernetes.io/control-plane: null\n"
    "tolerations:\n"
    "  - effect: NoSchedule\n"
    "    key: node.cloudprovider.kubernetes.io/uninitialized\n"
    "    value: \"true\"\n"
    "  - effect: NoSchedule\n"
    "    key: node-role.kubernetes.io/controlplane\n"
    "    value: \"true\"\n"
    "  - effect: NoExecute\n"
    "    key: node-role.kubernetes.io/etcd\n"
    "    value: \"true\"\n"
    "clusterRoleRules:\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [events]\n"
    "    verbs: [create, patch, update]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [nodes]\n"
    "    verbs: [\"*\"]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [nodes/status]\n"
    "    verbs: [patch]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [services]\n"
    "    verbs: [list, patch, update, watch]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [services/status]\n"
    "    verbs: [list, patch, update, watch]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [serviceaccounts]\n"
    "    verbs: [create, get]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [persistentvolumes]\n"
    "    verbs: [get, list, update, watch]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [endpoints]\n"
    "    verbs: [create, get, list, watch, update]\n"
    "  - apiGroups: [coordination.k8s.io]\n"
    "    resources: [leases]\n"
    "    verbs: [create, get, list, watch, update]\n"
    "  - apiGroups: [\"\"]\n"
    "    resources: [serviceaccounts/token]\n"
    "    verbs: [create]\n"
    "  - apiGroups: [authentication.k8s.io]\n"
    "    resources: [tokenreviews]\n"
    "    verbs: [create]\n"
    "  - apiGroups: [authorization.k8s.io]\n"
    "    resources: [subjectaccessreviews]\n"
    "    verbs: [create]\n"
    "args:\n"
    "  - --configure-cloud-routes=false\n"
    "  - --use-service-account-credentials=true\n"
    "  - --v=2\n"
    "  - --cloud-provider=aws\n";

absl::Status Invalid(const PhaseOptions& options, std::string_view field, std::string_view what) {
  return absl::InvalidArgumentError(StrCat(options.source, ": ", field, ": ", what));
}

absl::Status OutOfOrder(const PhaseOptions& options, Phase phase, std::string_view field,
                        std::string_view what) {
  return absl::FailedPreconditionError(
      StrCat(options.source, ": ", field, ": ", what, "; --phase ", PhaseName(phase), " refused"));
}

bool ScalarIs(const YAML::Node& map, const char* key, std::string_view value) {
  return HasField(map, key, YAML::NodeType::Scalar) && map[key].Scalar() == value;
}

// Whether `arg` turns Leader Migration on, in any spelling RKE2 passes on
// ("enable-leader-migration", "enable-leader-migration=true", with or without dashes).
bool IsLeaderMigrationArg(std::string_view arg) {
  while (!arg.empty() && arg.front() == '-') arg.remove_prefix(1);
  return arg == kKcmLeaderMigrationArg || arg == "enable-leader-migration=true";
}

// A machineLabelSelector that selects exactly the control-plane machines: one matchExpressions
// term `rke.cattle.io/control-plane-role In ['true']` (the seed's shape), or matchLabels with that
// one label, and nothing else.
bool SelectsControlPlane(const YAML::Node& selector) {
  if (!selector.IsMap()) return false;
  const bool has_expressions = HasField(selector, "matchExpressions", YAML::NodeType::Sequence) &&
                               selector["matchExpressions"].size() > 0;
  const bool has_labels =
      HasField(selector, "matchLabels", YAML::NodeType::Map) && selector["matchLabels"].size() > 0;
  if (has_expressions == has_labels) return false;
  if (has_labels) {
    const YAML::Node labels = selector["matchLabels"];
    return labels.size() == 1 && ScalarIs(labels, kControlPlaneRoleLabel, "true");
  }
  const YAML::Node expressions = selector["matchExpressions"];
  if (expressions.size() != 1) return false;
  const YAML::Node term = expressions[0];
  if (!term.IsMap() || !ScalarIs(term, "key", kControlPlaneRoleLabel) ||
      !ScalarIs(term, "operator", "In") || !HasField(term, "values", YAML::NodeType::Sequence)) {
    return false;
  }
  const YAML::Node values = term["values"];
  return values.size() == 1 && values[0].IsScalar() && values[0].Scalar() == "true";
}

// The document, checked to be a provisioning.cattle.io/v1 Cluster with spec.rkeConfig.
absl::StatusOr<YAML::Node> LoadCluster(std::string_view text, const PhaseOptions& options) {
  absl::StatusOr<YAML::Node> doc = LoadYaml(text, options.source);
  if (!doc.ok()) return doc.status();
  if (!doc->IsMap()) return Invalid(options, "(document)", "not a map");
  if (!ScalarIs(*doc, "apiVersion", "provisioning.cattle.io/v1") ||
      !ScalarIs(*doc, "kind", "Cluster")) {
    return Invalid(options, "apiVersion/kind",
                   "not a provisioning.cattle.io/v1 Cluster (Rancher's RKE2 provisioning cluster; "
                   "for an RKE cluster.yml use `handoffctl rancher rke`)");
  }
  if (!HasField(*doc, "spec", YAML::NodeType::Map) ||
      !HasField((*doc)["spec"], "rkeConfig", YAML::NodeType::Map)) {
    return Invalid(options, "spec.rkeConfig",
                   "missing: not a cluster Rancher provisions with RKE2 or K3s");
  }
  return doc;
}

// machineGlobalConfig.cloud-provider-name, "" when absent.
std::string CloudProviderName(const YAML::Node& rke_config) {
  if (!HasField(rke_config, "machineGlobalConfig", YAML::NodeType::Map)) return "";
  const YAML::Node global = rke_config["machineGlobalConfig"];
  return HasField(global, "cloud-provider-name", YAML::NodeType::Scalar)
             ? global["cloud-provider-name"].Scalar()
             : "";
}

absl::Status CheckSelectorConfigShape(const YAML::Node& rke_config, const PhaseOptions& options) {
  if (!rke_config["machineSelectorConfig"]) return absl::OkStatus();
  const YAML::Node entries = rke_config["machineSelectorConfig"];
  if (entries.IsNull()) return absl::OkStatus();
  if (!entries.IsSequence()) {
    return Invalid(options, "spec.rkeConfig.machineSelectorConfig",
                   StrCat("is ", DescribeYamlNode(entries), ", not a list"));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node entry = entries[i];
    const std::string field = StrCat("spec.rkeConfig.machineSelectorConfig[", i, "]");
    if (!entry.IsMap()) return Invalid(options, field, "not a map");
    if (entry["config"] && !entry["config"].IsMap() && !entry["config"].IsNull()) {
      return Invalid(options, StrCat(field, ".config"), "not a map");
    }
    if (HasField(entry, "config", YAML::NodeType::Map) && entry["config"][kKcmArgKey] &&
        !entry["config"][kKcmArgKey].IsSequence()) {
      return Invalid(options, StrCat(field, ".config.", kKcmArgKey),
                     StrCat("is ", DescribeYamlNode(entry["config"][kKcmArgKey]), ", not a list"));
    }
  }
  return absl::OkStatus();
}

// The index of the control-plane entry, or nullopt.
std::optional<size_t> ControlPlaneEntry(const YAML::Node& rke_config) {
  if (!HasField(rke_config, "machineSelectorConfig", YAML::NodeType::Sequence)) return std::nullopt;
  const YAML::Node entries = rke_config["machineSelectorConfig"];
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].IsMap() && entries[i]["machineLabelSelector"] &&
        SelectsControlPlane(entries[i]["machineLabelSelector"])) {
      return i;
    }
  }
  return std::nullopt;
}

bool EntryHasLeaderMigration(const YAML::Node& entry) {
  if (!HasField(entry, "config", YAML::NodeType::Map) ||
      !HasField(entry["config"], kKcmArgKey, YAML::NodeType::Sequence)) {
    return false;
  }
  for (const YAML::Node& arg : entry["config"][kKcmArgKey]) {
    if (arg.IsScalar() && IsLeaderMigrationArg(arg.Scalar())) return true;
  }
  return false;
}

YAML::Node ControlPlaneSelector() {
  YAML::Node term(YAML::NodeType::Map);
  term["key"] = std::string(kControlPlaneRoleLabel);
  term["operator"] = std::string("In");
  YAML::Node values(YAML::NodeType::Sequence);
  values.push_back(std::string("true"));
  term["values"] = values;
  YAML::Node expressions(YAML::NodeType::Sequence);
  expressions.push_back(term);
  YAML::Node selector(YAML::NodeType::Map);
  selector["matchExpressions"] = expressions;
  return selector;
}

// The documents of a multi-document YAML string, each with its own text, so that the ones a phase
// does not change are written back byte for byte.
struct Manifest {
  std::vector<std::string> texts;       // the documents' texts
  std::vector<std::string> separators;  // separators[i] ends texts[i] ("---\n" lines as found)
  std::optional<size_t> chart;          // the index of the aws-cloud-controller-manager chart
  YAML::Node chart_node;

  std::string Join() const {
    std::string out;
    for (size_t i = 0; i < texts.size(); ++i) {
      out += texts[i];
      if (i < separators.size()) out += separators[i];
    }
    return out;
  }
};

bool IsSeparatorLine(std::string_view line) {
  if (line.substr(0, 3) != "---") return false;
  line.remove_prefix(3);
  return line.empty() || line.front() == ' ' || line.front() == '\t' || line.front() == '\r' ||
         line.front() == '\n';
}

absl::StatusOr<Manifest> SplitManifest(std::string_view text, const PhaseOptions& options) {
  Manifest manifest;
  std::string current;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    end = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(pos, end - pos);
    if (IsSeparatorLine(line) && line.find_first_not_of("- \t\r\n") == std::string_view::npos) {
      manifest.texts.push_back(std::move(current));
      current.clear();
      manifest.separators.emplace_back(line);
    } else {
      current.append(line);
    }
    pos = end;
  }
  manifest.texts.push_back(std::move(current));
  const std::string source = StrCat(options.source, ": ", kManifestField);
  for (size_t i = 0; i < manifest.texts.size(); ++i) {
    absl::StatusOr<std::vector<YAML::Node>> docs = LoadYamlDocuments(manifest.texts[i], source);
    if (!docs.ok()) return docs.status();
    if (docs->size() > 1) {
      return Invalid(options, kManifestField,
                     StrCat("document ", i + 1, " holds more than one YAML document; separate "
                                                "them with a line \"---\""));
    }
    if (docs->empty()) continue;
    const YAML::Node& doc = docs->front();
    if (!doc.IsMap() || !ScalarIs(doc, "kind", "HelmChart") ||
        !HasField(doc, "metadata", YAML::NodeType::Map) ||
        !ScalarIs(doc["metadata"], "name", kChartName)) {
      continue;
    }
    if (manifest.chart) {
      return Invalid(options, kManifestField,
                     StrCat("two HelmCharts named ", kChartName, " (documents ",
                            *manifest.chart + 1, " and ", i + 1, "); keep one"));
    }
    if (!ScalarIs(doc, "apiVersion", "helm.cattle.io/v1")) {
      return Invalid(options, StrCat(kManifestField, " (HelmChart ", kChartName, ").apiVersion"),
                     "not helm.cattle.io/v1");
    }
    manifest.chart = i;
    manifest.chart_node = doc;
  }
  return manifest;
}

absl::StatusOr<Manifest> ReadManifest(const YAML::Node& rke_config, const PhaseOptions& options) {
  std::string text;
  if (rke_config["additionalManifest"] && !rke_config["additionalManifest"].IsNull()) {
    if (!rke_config["additionalManifest"].IsScalar()) {
      return Invalid(options, kManifestField,
                     StrCat("is ", DescribeYamlNode(rke_config["additionalManifest"]),
                            ", not a string holding YAML documents"));
    }
    text = rke_config["additionalManifest"].Scalar();
  }
  return SplitManifest(text, options);
}

// The chart's values (spec.valuesContent parsed; an empty map when absent).
absl::StatusOr<YAML::Node> ChartValues(const YAML::Node& chart, const PhaseOptions& options) {
  const std::string field =
      StrCat(kManifestField, " (HelmChart ", kChartName, ").spec.valuesContent");
  if (!HasField(chart, "spec", YAML::NodeType::Map) || !chart["spec"]["valuesContent"] ||
      chart["spec"]["valuesContent"].IsNull()) {
    return YAML::Node(YAML::NodeType::Map);
  }
  if (!chart["spec"]["valuesContent"].IsScalar()) {
    return Invalid(options, field, "not a string");
  }
  const std::string text = chart["spec"]["valuesContent"].Scalar();
  absl::StatusOr<std::vector<YAML::Node>> docs =
      LoadYamlDocuments(text, StrCat(options.source, ": ", field));
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return YAML::Node(YAML::NodeType::Map);
  if (docs->size() > 1 || !docs->front().IsMap()) return Invalid(options, field, "not one map");
  YAML::Node values = docs->front();
  if (values["args"] && !values["args"].IsSequence() && !values["args"].IsNull()) {
    return Invalid(options, StrCat(field, ": args"), "not a list");
  }
  return values;
}

bool ChartHasLeaderMigration(const YAML::Node& values) {
  if (!HasField(values, "args", YAML::NodeType::Sequence)) return false;
  for (const YAML::Node& arg : values["args"]) {
    if (arg.IsScalar() && arg.Scalar().rfind("--enable-leader-migration", 0) == 0) return true;
  }
  return false;
}

// Writes `values` back into the chart, and the chart back into the manifest, when they changed.
void StoreChart(Manifest& manifest, YAML::Node chart, const YAML::Node& values,
                const YAML::Node& values_before, YAML::Node rke_config) {
  if (SemanticallyEqual(values, values_before)) return;
  chart["spec"]["valuesContent"] = EmitYaml(values);
  manifest.texts[*manifest.chart] = EmitYaml(chart);
  rke_config["additionalManifest"] = manifest.Join();
}

absl::Status Rke2Prepare(YAML::Node rke_config, const PhaseOptions& options) {
  const std::string provider = CloudProviderName(rke_config);
  if (provider != "aws") {
    return OutOfOrder(options, Phase::kPrepare,
                      "spec.rkeConfig.machineGlobalConfig.cloud-provider-name",
                      provider.empty() ? "absent: the cluster does not run the in-tree AWS provider"
                                       : StrCat("is \"", provider, "\", not \"aws\": nothing to "
                                                "migrate from"));
  }
  std::optional<size_t> index = ControlPlaneEntry(rke_config);
  if (!index) {
    YAML::Node entry(YAML::NodeType::Map);
    YAML::Node config(YAML::NodeType::Map);
    YAML::Node args(YAML::NodeType::Sequence);
    args.push_back(std::string(kKcmLeaderMigrationArg));
    config[kKcmArgKey] = args;
    entry["config"] = config;
    entry["machineLabelSelector"] = ControlPlaneSelector();
    if (!HasField(rke_config, "machineSelectorConfig", YAML::NodeType::Sequence)) {
      rke_config["machineSelectorConfig"] = YAML::Node(YAML::NodeType::Sequence);
    }
    rke_config["machineSelectorConfig"].push_back(entry);
    return absl::OkStatus();
  }
  YAML::Node entry = rke_config["machineSelectorConfig"][*index];
  if (EntryHasLeaderMigration(entry)) return absl::OkStatus();
  if (!HasField(entry, "config", YAML::NodeType::Map)) {
    entry["config"] = YAML::Node(YAML::NodeType::Map);
  }
  YAML::Node config = entry["config"];
  if (!HasField(config, kKcmArgKey, YAML::NodeType::Sequence)) {
    config[kKcmArgKey] = YAML::Node(YAML::NodeType::Sequence);
  }
  config[kKcmArgKey].push_back(std::string(kKcmLeaderMigrationArg));
  return absl::OkStatus();
}

absl::Status Rke2DeployCcm(YAML::Node rke_config, const PhaseOptions& options) {
  const std::string provider = CloudProviderName(rke_config);
  if (provider != "aws") {
    return OutOfOrder(options, Phase::kDeployCcm,
                      "spec.rkeConfig.machineGlobalConfig.cloud-provider-name",
                      StrCat("is \"", provider,
                             "\", not \"aws\" (deploy-ccm comes before migrate)"));
  }
  std::optional<size_t> index = ControlPlaneEntry(rke_config);
  if (!index || !EntryHasLeaderMigration(rke_config["machineSelectorConfig"][*index])) {
    return OutOfOrder(options, Phase::kDeployCcm,
                      StrCat("spec.rkeConfig.machineSelectorConfig (", kControlPlaneRoleLabel,
                             " In ['true']).config.", kKcmArgKey),
                      "no enable-leader-migration: run --phase prepare first");
  }
  absl::StatusOr<Manifest> manifest = ReadManifest(rke_config, options);
  if (!manifest.ok()) return manifest.status();
  if (!manifest->chart) {
    std::string text = manifest->Join();
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      text = kRke2Chart;
    } else {
      if (text.back() != '\n') text += '\n';
      StrAppend(&text, "---\n", kRke2Chart);
    }
    rke_config["additionalManifest"] = text;
    return absl::OkStatus();
  }
  YAML::Node chart = manifest->chart_node;
  absl::StatusOr<YAML::Node> values = ChartValues(chart, options);
  if (!values.ok()) return values.status();
  absl::StatusOr<YAML::Node> before = ChartValues(chart, options);
  if (!before.ok()) return before.status();
  if (!ChartHasLeaderMigration(*values)) {
    if (!HasField(*values, "args", YAML::NodeType::Sequence)) {
      (*values)["args"] = YAML::Node(YAML::NodeType::Sequence);
    }
    (*values)["args"].push_back(std::string(kCcmLeaderMigrationArg));
  }
  // A chart the operator wrote keeps its own placement; where it has none, the chart's defaults
  // would select no RKE2 node (label value "") or skip etcd+control-plane ones (see kRke2Chart).
  if (!(*values)["nodeSelector"] || (*values)["nodeSelector"].IsNull()) {
    YAML::Node selector(YAML::NodeType::Map);
    selector["node-role.kubernetes.io/control-plane"] = std::string("true");
    (*values)["nodeSelector"] = selector;
  }
  if (!(*values)["tolerations"] || (*values)["tolerations"].IsNull()) {
    (*values)["tolerations"] = YAML::Load(kRke2Tolerations);
  }
  if (!HasField(chart, "spec", YAML::NodeType::Map)) {
    chart["spec"] = YAML::Node(YAML::NodeType::Map);
  }
  StoreChart(*manifest, chart, *values, *before, rke_config);
  return absl::OkStatus();
}

absl::Status Rke2Migrate(YAML::Node spec, YAML::Node rke_config, const PhaseOptions& options) {
  const std::string provider = CloudProviderName(rke_config);
  if (provider != "aws" && provider != "external") {
    return OutOfOrder(options, Phase::kMigrate,
                      "spec.rkeConfig.machineGlobalConfig.cloud-provider-name",
                      provider.empty() ? "absent: the cluster does not run the in-tree AWS provider"
                                       : StrCat("is \"", provider, "\", neither aws nor external"));
  }
  absl::StatusOr<Manifest> manifest = ReadManifest(rke_config, options);
  if (!manifest.ok()) return manifest.status();
  if (!manifest->chart) {
    return OutOfOrder(options, Phase::kMigrate, kManifestField,
                      StrCat("no HelmChart ", kChartName,
                             ": the cloud-controller-manager must run before the in-tree "
                             "controllers stop; run --phase deploy-ccm first"));
  }
  rke_config["machineGlobalConfig"]["cloud-provider-name"] = std::string("external");
  if (HasField(rke_config, "machineSelectorConfig", YAML::NodeType::Sequence)) {
    YAML::Node kept(YAML::NodeType::Sequence);
    bool changed = false;
    for (YAML::Node entry : rke_config["machineSelectorConfig"]) {
      if (!HasField(entry, "config", YAML::NodeType::Map) ||
          !HasField(entry["config"], kKcmArgKey, YAML::NodeType::Sequence)) {
        kept.push_back(entry);
        continue;
      }
      YAML::Node config = entry["config"];
      YAML::Node args(YAML::NodeType::Sequence);
      bool removed = false;
      for (const YAML::Node& arg : config[kKcmArgKey]) {
        if (arg.IsScalar() && IsLeaderMigrationArg(arg.Scalar())) {
          removed = true;
        } else {
          args.push_back(arg);
        }
      }
      if (!removed) {
        kept.push_back(entry);
        continue;
      }
      changed = true;
      if (args.size() > 0) {
        config[kKcmArgKey] = args;
      } else {
        config.remove(kKcmArgKey);
      }
      // An entry whose only config was the argument would select machines for nothing.
      if (config.size() > 0) kept.push_back(entry);
    }
    if (changed) {
      if (kept.size() > 0) {
        rke_config["machineSelectorConfig"] = kept;
      } else {
        rke_config.remove("machineSelectorConfig");
      }
    }
  }
  if (!options.kubernetes_version.empty()) {
    spec["kubernetesVersion"] = options.kubernetes_version;
  }
  return absl::OkStatus();
}

absl::Status Rke2Finalize(YAML::Node rke_config, const PhaseOptions& options) {
  const std::string provider = CloudProviderName(rke_config);
  if (provider != "external") {
    return OutOfOrder(options, Phase::kFinalize,
                      "spec.rkeConfig.machineGlobalConfig.cloud-provider-name",
                      StrCat("is \"", provider,
                             "\", not \"external\": the in-tree controllers still run; run "
                             "--phase migrate first"));
  }
  absl::StatusOr<Manifest> manifest = ReadManifest(rke_config, options);
  if (!manifest.ok()) return manifest.status();
  if (!manifest->chart) {
    return OutOfOrder(options, Phase::kFinalize, kManifestField,
                      StrCat("no HelmChart ", kChartName, ": run --phase deploy-ccm first"));
  }
  YAML::Node chart = manifest->chart_node;
  absl::StatusOr<YAML::Node> values = ChartValues(chart, options);
  if (!values.ok()) return values.status();
  absl::StatusOr<YAML::Node> before = ChartValues(chart, options);
  if (!before.ok()) return before.status();
  if (!ChartHasLeaderMigration(*values)) return absl::OkStatus();
  YAML::Node args(YAML::NodeType::Sequence);
  for (const YAML::Node& arg : (*values)["args"]) {
    if (!(arg.IsScalar() && arg.Scalar().rfind("--enable-leader-migration", 0) == 0)) {
      args.push_back(arg);
    }
  }
  (*values)["args"] = args;
  StoreChart(*manifest, chart, *values, *before, rke_config);
  return absl::OkStatus();
}

// The text of `doc`, or `text` itself when the phase left the tree as it was (so that a phase with
// nothing to do keeps comments and formatting, and applying a phase twice changes nothing).
absl::StatusOr<std::string> Result(std::string_view text, const YAML::Node& doc,
                                   const PhaseOptions& options) {
  absl::StatusOr<YAML::Node> original = LoadYaml(text, options.source);
  if (!original.ok()) return original.status();
  if (SemanticallyEqual(*original, doc)) return std::string(text);
  return EmitYaml(doc);
}

// RKE: the map holding cloud_provider and services (the document, or its
// rancher_kubernetes_engine_config), and the field prefix for messages.
struct RkeRoot {
  YAML::Node node;
  std::string prefix;
};

absl::StatusOr<RkeRoot> LoadRke(YAML::Node doc, const PhaseOptions& options) {
  if (!doc.IsMap()) return Invalid(options, "(document)", "not a map");
  if (HasField(doc, "apiVersion", YAML::NodeType::Scalar)) {
    return Invalid(options, "apiVersion",
                   StrCat("\"", doc["apiVersion"].Scalar(),
                          "\": a Kubernetes object, not an RKE cluster.yml (for Rancher's RKE2 "
                          "provisioning Cluster use `handoffctl rancher rke2`)"));
  }
  // Built in one go: assigning a YAML::Node replaces the node it refers to (the document here).
  const bool wrapped = static_cast<bool>(doc["rancher_kubernetes_engine_config"]);
  if (wrapped && !doc["rancher_kubernetes_engine_config"].IsMap()) {
    return Invalid(options, "rancher_kubernetes_engine_config", "not a map");
  }
  RkeRoot root{wrapped ? doc["rancher_kubernetes_engine_config"] : doc,
               wrapped ? "rancher_kubernetes_engine_config." : ""};
  if (!HasField(root.node, "cloud_provider", YAML::NodeType::Map)) {
    return Invalid(options, StrCat(root.prefix, "cloud_provider"),
                   "missing: not an RKE cluster.yml that uses a cloud provider");
  }
  if (root.node["services"] && !root.node["services"].IsMap() && !root.node["services"].IsNull()) {
    return Invalid(options, StrCat(root.prefix, "services"), "not a map");
  }
  return root;
}

std::string RkeProviderName(const RkeRoot& root) {
  const YAML::Node provider = root.node["cloud_provider"];
  return HasField(provider, "name", YAML::NodeType::Scalar) ? provider["name"].Scalar() : "";
}

// services.kube-controller.extra_args, or an undefined node when absent.
YAML::Node KubeControllerArgs(const RkeRoot& root) {
  if (!HasField(root.node, "services", YAML::NodeType::Map)) return YAML::Node();
  const YAML::Node services = root.node["services"];
  if (!HasField(services, "kube-controller", YAML::NodeType::Map)) return YAML::Node();
  const YAML::Node controller = services["kube-controller"];
  if (!HasField(controller, "extra_args", YAML::NodeType::Map)) return YAML::Node();
  return controller["extra_args"];
}

bool RkeHasLeaderMigration(const RkeRoot& root) {
  const YAML::Node args = KubeControllerArgs(root);
  // extra_args is map[string]string: RKE passes "true" (quoted or not) as the flag's value.
  return args.IsDefined() && HasField(args, kKcmLeaderMigrationArg, YAML::NodeType::Scalar) &&
         args[kKcmLeaderMigrationArg].Scalar() == "true";
}

absl::Status RkePrepare(RkeRoot& root, const PhaseOptions& options) {
  const std::string provider = RkeProviderName(root);
  if (provider != "aws") {
    return OutOfOrder(options, Phase::kPrepare, StrCat(root.prefix, "cloud_provider.name"),
                      StrCat("is \"", provider, "\", not \"aws\": nothing to migrate from"));
  }
  if (RkeHasLeaderMigration(root)) return absl::OkStatus();
  if (!HasField(root.node, "services", YAML::NodeType::Map)) {
    root.node["services"] = YAML::Node(YAML::NodeType::Map);
  }
  YAML::Node services = root.node["services"];
  if (!HasField(services, "kube-controller", YAML::NodeType::Map)) {
    services["kube-controller"] = YAML::Node(YAML::NodeType::Map);
  }
  YAML::Node controller = services["kube-controller"];
  if (!HasField(controller, "extra_args", YAML::NodeType::Map)) {
    controller["extra_args"] = YAML::Node(YAML::NodeType::Map);
  }
  // A string: extra_args is map[string]string, and RKE refuses a YAML boolean there.
  controller["extra_args"][kKcmLeaderMigrationArg] = std::string("true");
  return absl::OkStatus();
}

absl::Status RkeMigrate(RkeRoot& root, const PhaseOptions& options) {
  const std::string provider = RkeProviderName(root);
  if (provider == "aws" && !RkeHasLeaderMigration(root)) {
    return OutOfOrder(options, Phase::kMigrate,
                      StrCat(root.prefix, "services.kube-controller.extra_args"),
                      "no enable-leader-migration: run --phase prepare (and install the chart) "
                      "first");
  }
  if (provider != "aws" && provider != "external-aws") {
    return OutOfOrder(options, Phase::kMigrate, StrCat(root.prefix, "cloud_provider.name"),
                      StrCat("is \"", provider, "\", neither aws nor external-aws"));
  }
  YAML::Node cloud_provider = root.node["cloud_provider"];
  cloud_provider["name"] = std::string("external-aws");
  // A YAML boolean, not the string "true": the field is a *bool in RKE's CloudProvider. yaml-cpp
  // tags plain scalars "?", and EmitYaml writes a scalar built in code as a string.
  YAML::Node use_metadata_hostname(options.use_instance_metadata_hostname ? "true" : "false");
  use_metadata_hostname.SetTag("?");
  cloud_provider["useInstanceMetadataHostname"] = use_metadata_hostname;
  YAML::Node args = KubeControllerArgs(root);
  if (args.IsDefined() && args[kKcmLeaderMigrationArg]) {
    args.remove(kKcmLeaderMigrationArg);
    YAML::Node services = root.node["services"];
    if (args.size() == 0) services["kube-controller"].remove("extra_args");
    if (services["kube-controller"].size() == 0) services.remove("kube-controller");
  }
  if (!options.kubernetes_version.empty()) {
    root.node["kubernetes_version"] = options.kubernetes_version;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Phase> ParsePhase(std::string_view name) {
  for (Phase phase : {Phase::kPrepare, Phase::kDeployCcm, Phase::kMigrate, Phase::kFinalize}) {
    if (PhaseName(phase) == name) return phase;
  }
  return absl::InvalidArgumentError(
      StrCat("--phase \"", name, "\": not one of prepare, deploy-ccm, migrate, finalize"));
}

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPrepare:
      return "prepare";
    case Phase::kDeployCcm:
      return "deploy-ccm";
    case Phase::kMigrate:
      return "migrate";
    case Phase::kFinalize:
      return "finalize";
  }
  return "?";
}

absl::StatusOr<std::string> Rke2Phase(std::string_view text, Phase phase,
                                      const PhaseOptions& options) {
  absl::StatusOr<YAML::Node> doc = LoadCluster(text, options);
  if (!doc.ok()) return doc.status();
  YAML::Node spec = (*doc)["spec"];
  YAML::Node rke_config = spec["rkeConfig"];
  if (rke_config["machineGlobalConfig"] && !rke_config["machineGlobalConfig"].IsMap()) {
    return Invalid(options, "spec.rkeConfig.machineGlobalConfig", "not a map");
  }
  if (absl::Status shape = CheckSelectorConfigShape(rke_config, options); !shape.ok()) return shape;
  absl::Status status;
  try {
    switch (phase) {
      case Phase::kPrepare:
        status = Rke2Prepare(rke_config, options);
        break;
      case Phase::kDeployCcm:
        status = Rke2DeployCcm(rke_config, options);
        break;
      case Phase::kMigrate:
        status = Rke2Migrate(spec, rke_config, options);
        break;
      case Phase::kFinalize:
        status = Rke2Finalize(rke_config, options);
        break;
    }
  } catch (const YAML::Exception& e) {
    return Invalid(options, "(document)", e.what());
  }
  if (!status.ok()) return status;
  return Result(text, *doc, options);
}

absl::StatusOr<std::string> RkePhase(std::string_view text, Phase phase,
                                     const PhaseOptions& options) {
  absl::StatusOr<YAML::Node> doc = LoadYaml(text, options.source);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<RkeRoot> root = LoadRke(*doc, options);
  if (!root.ok()) return root.status();
  absl::Status status;
  try {
    switch (phase) {
      case Phase::kPrepare:
        status = RkePrepare(*root, options);
        break;
      case Phase::kDeployCcm:
        return absl::InvalidArgumentError(
            "--phase deploy-ccm is RKE2's: for RKE install the aws-cloud-controller-manager chart "
            "with the Helm values that --phase prepare prints");
      case Phase::kMigrate:
        status = RkeMigrate(*root, options);
        break;
      case Phase::kFinalize:
        if (RkeProviderName(*root) != "external-aws") {
          status = OutOfOrder(options, phase, StrCat(root->prefix, "cloud_provider.name"),
                              StrCat("is \"", RkeProviderName(*root),
                                     "\", not \"external-aws\": run --phase migrate first"));
        }
        break;
    }
  } catch (const YAML::Exception& e) {
    return Invalid(options, "(document)", e.what());
  }
  if (!status.ok()) return status;
  return Result(text, *doc, options);
}

std::string RkeCcmHelmValues(Phase phase, const PhaseOptions& /*options*/) {
  std::string values = kRkeHelmValues;
  if (phase != Phase::kFinalize) StrAppend(&values, "  - ", kCcmLeaderMigrationArg, "\n");
  return values;
}

}  // namespace handoff::rancher
