// handoffctl verify nodes: every Node has an AWS providerID and no uninitialized taint
// (coordinator/kube/nodes.h).
#include <memory>

#include "coordinator/kube/nodes.h"
#include "ctl/command_context.h"
#include "nlohmann/json.hpp"

namespace handoff::ctl {
namespace {

struct VerifyNodesFlags {
  ConnectionOptions connection;
  std::string format = "text";
  bool control_plane_only = false;
};

int VerifyNodes(CommandContext& context, const VerifyNodesFlags& flags) {
  absl::StatusOr<std::unique_ptr<kube::KubeClient>> client = context.Connect(flags.connection);
  if (!client.ok()) return context.Fail(client.status());
  absl::StatusOr<std::vector<kube::Json>> nodes =
      kube::ListNodes(**client, flags.control_plane_only);
  if (!nodes.ok()) return context.Fail(nodes.status());
  const std::vector<kube::NodeCheck> checks = kube::CheckNodes(*nodes);
  size_t bad = 0;
  for (const kube::NodeCheck& check : checks) bad += check.ok() ? 0 : 1;
  const std::string scope = flags.control_plane_only ? "control-plane nodes" : "nodes";

  if (flags.format == "json") {
    nlohmann::ordered_json json;
    json["nodes"] = nlohmann::ordered_json::array();
    for (const kube::NodeCheck& check : checks) {
      nlohmann::ordered_json node;
      node["name"] = check.name;
      node["providerID"] = check.provider_id;
      node["controlPlane"] = check.control_plane;
      node["ok"] = check.ok();
      node["problems"] = check.problems;
      json["nodes"].push_back(node);
    }
    json["bad"] = bad;
    context.out() << json.dump(2) << "\n";
  } else if (checks.empty()) {
    context.out() << "no " << scope << " found"
                  << (flags.control_plane_only
                          ? " (none is labelled node-role.kubernetes.io/control-plane)"
                          : "")
                  << "\n";
  } else {
    for (const kube::NodeCheck& check : checks) {
      for (const std::string& problem : check.problems) {
        context.out() << check.name << ": " << problem << "\n";
      }
    }
    if (bad == 0) {
      context.out() << "all " << checks.size() << " " << scope
                    << " have an AWS providerID and no uninitialized taint\n";
    } else {
      context.out() << bad << " of " << checks.size() << " " << scope << " have problems\n";
    }
  }
  return bad == 0 && !checks.empty() ? kExitOk : kExitProblems;
}

}  // namespace

void AddVerifyCommands(CLI::App& app, CommandContext& context) {
  CLI::App* verify = app.add_subcommand("verify", "Check the cluster after (or during) a move");
  verify->require_subcommand(1);
  auto flags = std::make_shared<VerifyNodesFlags>();
  CLI::App* nodes = verify->add_subcommand(
      "nodes",
      "Check that every Node has spec.providerID aws:///<zone>/<instance-id> and no "
      "node.cloudprovider.kubernetes.io/uninitialized taint, and that no two Nodes claim the "
      "same instance; print each bad node by name. Exit code 1 when any is bad (or none is "
      "found)");
  AddConnectionOptions(*nodes, flags->connection);
  AddOutputOption(*nodes, flags->format);
  nodes->add_flag("--control-plane-only", flags->control_plane_only,
                  "Only the nodes labelled node-role.kubernetes.io/control-plane");
  nodes->callback([&context, flags] { context.exit_code = VerifyNodes(context, *flags); });
}

}  // namespace handoff::ctl
