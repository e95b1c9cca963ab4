#include "coordinator/preflight/node_checks.h"

#include <utility>

#include "agent/cloud/instance_tags.h"
#include "common/base/strings.h"

namespace handoff::preflight {
namespace {

using kube::Json;
using kube::StringAt;

constexpr char kTagPrefix[] = "kubernetes.io/cluster/";

std::string Plural(size_t count, std::string_view word) {
  return StrCat(count, " ", word, count == 1 ? "" : "s");
}

CheckResult CheckClusterTag(const std::vector<NodeFacts>& nodes,
                            const std::string& settings_cluster_id) {
  CheckResult result{kCheckClusterTag, Verdict::kOk, {}, ""};
  std::vector<std::string> missing, wrong, unknown, fine;
  std::vector<std::string> fixes;  // the commands that would tag the instances
  for (const NodeFacts& facts : nodes) {
    const std::string& id = !facts.cloud_config_cluster_id.empty() ? facts.cloud_config_cluster_id
                                                                   : settings_cluster_id;
    const std::string instance = facts.instance_id.empty() ? std::string("its instance")
                                                           : StrCat("instance ", facts.instance_id);
    if (!facts.cluster_tags_known) {
      const std::string why = !facts.cluster_tags_error.empty() ? facts.cluster_tags_error
                              : !facts.metadata_error.empty()   ? facts.metadata_error
                                                                : "EC2 was not asked";
      unknown.push_back(StrCat(
          facts.node, ": ", why, "; check it yourself: `",
          DescribeTagsCommand(facts.instance_id, id.empty() ? std::string("<cluster-id>") : id),
          "` must show the value owned or shared"));
      continue;
    }
    if (id.empty()) {
      // The provider takes the one cluster tag its instance carries as the cluster's id.
      if (facts.cluster_tags.size() == 1) {
        const auto& [only, value] = *facts.cluster_tags.begin();
        if (value == "owned" || value == "shared") {
          fine.push_back(StrCat(facts.node, " (", kTagPrefix, only, "=", value, ")"));
        } else {
          wrong.push_back(
              StrCat(facts.node, ": ", instance, " has ", kTagPrefix, only, "=", value));
        }
        continue;
      }
      std::vector<std::string> keys;
      for (const auto& [tagged, value] : facts.cluster_tags)
        keys.push_back(StrCat(kTagPrefix, tagged));
      missing.push_back(
          facts.cluster_tags.empty()
              ? StrCat(facts.node, ": ", instance,
                       " carries no kubernetes.io/cluster/<id> tag, and neither the cloud config "
                       "(KubernetesClusterID) nor the settings (clusterId) name the cluster: the "
                       "cloud-controller-manager fails with \"AWS cloud failed to find ClusterID\"")
              : StrCat(facts.node, ": ", instance, " carries several cluster tags (",
                       StrJoin(keys, ", "),
                       ") and no KubernetesClusterID says which is this cluster's: the "
                       "cloud-controller-manager fails with \"Found multiple cluster tags\""));
      continue;
    }
    auto tag = facts.cluster_tags.find(id);
    if (tag == facts.cluster_tags.end()) {
      missing.push_back(StrCat(facts.node, ": ", instance, " has no tag ", kTagPrefix, id));
      if (!facts.instance_id.empty()) {
        fixes.push_back(StrCat("aws ec2 create-tags --resources ", facts.instance_id,
                               " --tags Key=", kTagPrefix, id, ",Value=owned"));
      }
    } else if (tag->second != "owned" && tag->second != "shared") {
      wrong.push_back(
          StrCat(facts.node, ": ", instance, " has ", kTagPrefix, id, "=", tag->second));
    } else {
      fine.push_back(StrCat(facts.node, " (", kTagPrefix, id, "=", tag->second, ")"));
    }
  }
  if (!missing.empty() || !wrong.empty()) {
    result.verdict = Verdict::kFail;
    result.evidence = missing;
    result.evidence.insert(result.evidence.end(), wrong.begin(), wrong.end());
    result.evidence.insert(result.evidence.end(), unknown.begin(), unknown.end());
    result.action = StrCat(
        "tag every control-plane instance kubernetes.io/cluster/<id> with owned or shared "
        "before the cloud-controller-manager starts on it (it exits at start otherwise)",
        fixes.empty() ? "" : StrCat(": ", StrJoin(fixes, "; ")));
  } else if (!unknown.empty()) {
    result.verdict = Verdict::kWarn;
    result.evidence = unknown;
    result.action =
        "give the agents the instance profile's ec2:DescribeInstances (the "
        "cloud-controller-manager's own policy has it), or check each instance's tag by hand";
  } else {
    result.evidence.push_back(
        StrCat(Plural(fine.size(), "node"), " tagged: ", StrJoin(fine, ", ")));
  }
  return result;
}

}  // namespace

NodeFacts FromReport(const std::string& node, const v1::NodeFacts* reported) {
  NodeFacts facts;
  facts.node = node;
  if (reported == nullptr) {
    facts.metadata_error = "its agent has not reported the node";
    return facts;
  }
  facts.instance_id = reported->instance_id();
  facts.local_hostname = reported->local_hostname();
  facts.availability_zone = reported->availability_zone();
  facts.metadata_error = reported->metadata_error();
  facts.stray_files.assign(reported->stray_files().begin(), reported->stray_files().end());
  facts.cluster_tags.insert(reported->cluster_tags().begin(), reported->cluster_tags().end());
  facts.cluster_tags_known = reported->cluster_tags_known();
  facts.cluster_tags_error = reported->cluster_tags_error();
  facts.cloud_config_cluster_id = reported->cloud_config_cluster_id();
  facts.kubelet_node_name = reported->kubelet_node_name();
  return facts;
}

std::optional<KubeletFacts> KubeletFromReport(const v1::NodeFacts& reported) {
  if (!reported.kubelet_flags_known()) return std::nullopt;
  KubeletFacts facts;
  facts.credential_provider_config = !reported.image_credential_provider_config().empty();
  facts.credential_provider_bin_dir = !reported.image_credential_provider_bin_dir().empty();
  facts.move_writes_flags = reported.worker_role();
  facts.provider_installed = reported.credential_provider_installed();
  facts.provider_dir = reported.credential_provider_install_dir();
  return facts;
}

std::vector<CheckResult> RunNodeChecks(const ClusterView& view,
                                       const std::optional<std::vector<NodeFacts>>& nodes,
                                       const std::string& settings_cluster_id) {
  CheckResult names{kCheckNodeNames, Verdict::kOk, {}, ""};
  CheckResult stray{kCheckStrayFiles, Verdict::kOk, {}, ""};
  if (!nodes) {
    CheckResult tag{kCheckClusterTag, Verdict::kOk, {}, ""};
    for (CheckResult* result : {&names, &stray, &tag}) {
      result->verdict = Verdict::kWarn;
      result->evidence.push_back("not asked: only the nodes' agents see this (no coordinator)");
      result->action = "pass --coordinator (or set HANDOFF_COORDINATOR)";
    }
    return {names, stray, tag};
  }
  std::map<std::string, const Json*> objects;
  if (view.nodes) {
    for (const Json& node : *view.nodes) objects[kube::ObjectName(node)] = &node;
  }
  std::vector<std::string> wrong, unknown, renamed, fine;
  for (const NodeFacts& facts : *nodes) {
    if (!facts.kubelet_node_name.empty() && facts.kubelet_node_name != facts.node) {
      wrong.push_back(StrCat("Node ", facts.node, ": its kubelet goes by ", facts.kubelet_node_name,
                             " (--hostname-override, else the host name) and registers a new "
                             "Node of that name, without a providerID, once the move restarts it "
                             "with --cloud-provider=external"));
    }
    if (facts.local_hostname.empty()) {
      unknown.push_back(
          StrCat(facts.node, ": the instance metadata was not read (", facts.metadata_error, ")"));
      continue;
    }
    if (facts.local_hostname != facts.node) {
      // The providers find such a Node's instance only through its providerID (checked next),
      // and a kubelet switched to --cloud-provider=external registers under its host name
      // unless --hostname-override says otherwise.
      renamed.push_back(StrCat("Node ", facts.node, ": its instance ", facts.instance_id,
                               " is named ", facts.local_hostname, " (local-hostname)"));
    }
    auto object = objects.find(facts.node);
    if (object == objects.end()) {
      unknown.push_back(StrCat(facts.node, ": no Node object of that name",
                               view.nodes ? "" : " (Nodes not read)"));
      continue;
    }
    const std::string provider_id = StringAt(*object->second, {"spec", "providerID"});
    const std::string expected = StrCat("aws:///", facts.availability_zone, "/", facts.instance_id);
    if (provider_id != expected) {
      wrong.push_back(StrCat("Node ", facts.node, ": providerID \"", provider_id,
                             "\", its instance is ", expected));
      continue;
    }
    fine.push_back(facts.node);
  }
  if (!wrong.empty()) {
    names.verdict = Verdict::kFail;
    names.evidence = wrong;
    names.evidence.insert(names.evidence.end(), unknown.begin(), unknown.end());
    names.action =
        "give each Node the providerID of its instance, and each kubelet the Node's name "
        "(--hostname-override with it, or the host named so): the AWS cloud providers find a "
        "Node's instance by its providerID, and the cloud-controller-manager cannot initialise "
        "(or deletes) a Node it cannot find";
  } else if (!unknown.empty() || !renamed.empty()) {
    names.verdict = Verdict::kWarn;
    names.evidence = renamed;
    names.evidence.insert(names.evidence.end(), unknown.begin(), unknown.end());
    names.action =
        renamed.empty()
            ? "let the agents reach the instance metadata (instanceMetadata.endpoint in their "
              "settings), or compare each Node with its instance by hand"
            : "keep each kubelet's node name when it goes external (--hostname-override with the "
              "Node's name): the providers find these Nodes' instances only by providerID";
  } else {
    names.evidence.push_back(StrCat(fine.size(), " node", fine.size() == 1 ? "" : "s",
                                    " named after their instances, providerIDs matching"));
  }
  for (const NodeFacts& facts : *nodes) {
    for (const std::string& file : facts.stray_files) {
      stray.evidence.push_back(StrCat(facts.node, ": ", file));
    }
  }
  if (!stray.evidence.empty()) {
    stray.verdict = Verdict::kFail;
    stray.action =
        "move these files out of the manifest directory: the kubelet runs every file "
        "there, and the agent refuses to move a node it cannot classify";
  } else {
    stray.evidence.push_back(StrCat("no stray file in the manifest directories of ", nodes->size(),
                                    " node", nodes->size() == 1 ? "" : "s"));
  }
  return {names, stray, CheckClusterTag(*nodes, settings_cluster_id)};
}

}  // namespace handoff::preflight
