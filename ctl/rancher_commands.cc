// handoffctl rancher rke2|rke: a Rancher cluster's configuration changed for one phase of the move
// to the out-of-tree AWS cloud-controller-manager (coordinator/rancher/rancher_config.h). Files
// only: nothing here talks to Rancher or the cluster.

#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "common/base/strings.h"
#include "common/base/unified_diff.h"
#include "common/fs/output_file.h"
#include "common/fs/read_limit.h"
#include "coordinator/rancher/rancher_config.h"
#include "ctl/command_context.h"

namespace handoff::ctl {
namespace {

constexpr ReadLimit kClusterFileRead{"cluster file", 4 * kMiB};

struct RancherFlags {
  std::string phase;
  std::string file;
  std::string kubernetes_version;
  std::string use_instance_metadata_hostname = "true";
  std::string output;
  std::string helm_values;
  bool diff = false;
};

enum class Distribution { kRke2, kRke };

// `-f -`: the file comes on standard input, named so in messages and diffs.
constexpr char kStdinFile[] = "-";
constexpr char kStdinName[] = "<stdin>";

// Reads `input` to its end, refusing more than `limit` allows, as FileSystem::ReadFile does.
absl::StatusOr<std::string> ReadAll(std::istream& input, const ReadLimit& limit) {
  std::string text;
  char buffer[64 * 1024];
  while (input.read(buffer, sizeof(buffer)) || input.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(input.gcount()));
    if (absl::Status size = CheckReadSize(kStdinName, text.size(), limit); !size.ok()) {
      return size;
    }
  }
  if (input.bad()) return absl::DataLossError(StrCat(kStdinName, ": read failed"));
  return text;
}

// Writes `content` to `path` (WriteOutputFile: atomically, only ever over a regular file); a new
// file is the operator's, mode 0600 (a cluster file can hold credentials).
absl::Status WriteOutput(FileSystem& files, const std::string& path, std::string_view content,
                         std::string_view what) {
  absl::Status written = WriteOutputFile(files, path, content, 0600);
  if (!written.ok()) return absl::Status(written.code(), StrCat(what, " ", written.message()));
  return absl::OkStatus();
}

int Run(CommandContext& context, Distribution distribution, const RancherFlags& flags) {
  absl::StatusOr<rancher::Phase> phase = rancher::ParsePhase(flags.phase);
  if (!phase.ok()) return context.Fail(phase.status());
  const bool from_stdin = flags.file == kStdinFile;
  const std::string source = from_stdin ? kStdinName : flags.file;
  rancher::PhaseOptions options;
  options.source = source;
  options.kubernetes_version = flags.kubernetes_version;
  if (flags.use_instance_metadata_hostname == "true") {
    options.use_instance_metadata_hostname = true;
  } else if (flags.use_instance_metadata_hostname == "false") {
    options.use_instance_metadata_hostname = false;
  } else {
    return context.Fail(absl::InvalidArgumentError(
        StrCat("--use-instance-metadata-hostname \"", flags.use_instance_metadata_hostname,
               "\": not true or false")));
  }
  if (!flags.output.empty() && flags.diff) {
    return context.Fail(absl::InvalidArgumentError("-o and --diff exclude each other"));
  }

  std::unique_ptr<FileSystem> files = context.environment().open_files();
  absl::StatusOr<std::string> text =
      from_stdin ? ReadAll(context.environment().standard_input(), kClusterFileRead)
                 : files->ReadFile(flags.file, kClusterFileRead);
  if (!text.ok()) {
    return context.Fail(
        absl::Status(text.status().code(), StrCat("-f: ", text.status().message())));
  }
  absl::StatusOr<std::string> changed = distribution == Distribution::kRke2
                                            ? rancher::Rke2Phase(*text, *phase, options)
                                            : rancher::RkePhase(*text, *phase, options);
  if (!changed.ok()) return context.Fail(changed.status());

  if (distribution == Distribution::kRke) {
    const std::string values = rancher::RkeCcmHelmValues(*phase, options);
    if (!flags.helm_values.empty()) {
      if (absl::Status written = WriteOutput(*files, flags.helm_values, values, "--helm-values");
          !written.ok()) {
        return context.Fail(written);
      }
    } else {
      context.err() << "# Helm values for the aws-cloud-controller-manager chart after --phase "
                    << rancher::PhaseName(*phase) << " (save them with --helm-values FILE):\n"
                    << values;
    }
  }

  if (flags.diff) {
    const std::string diff = UnifiedDiff(source, *text, *changed);
    if (diff.empty()) {
      context.err() << "rancher: no changes; " << source << " is already past --phase "
                    << rancher::PhaseName(*phase) << "\n";
    }
    context.out() << diff;
    return kExitOk;
  }
  if (!flags.output.empty()) {
    if (absl::Status written = WriteOutput(*files, flags.output, *changed, "-o"); !written.ok()) {
      return context.Fail(written);
    }
    context.err() << "rancher: wrote " << flags.output << " (--phase " << rancher::PhaseName(*phase)
                  << (*changed == *text ? ", no changes" : "") << ")\n";
    return kExitOk;
  }
  context.out() << *changed;
  return kExitOk;
}

// The phases as each command's --help shows them.
constexpr char kRke2Footer[] =
    "Phases, in order (each refuses a file not in the state it starts from):\n"
    "  prepare     kube-controller-manager-arg enable-leader-migration on the\n"
    "              machineSelectorConfig entry selecting rke.cattle.io/control-plane-role\n"
    "              In ['true'] (merged, never duplicated); cloud-provider-name stays aws.\n"
    "              Then cordon the control-plane nodes.\n"
    "  deploy-ccm  the helm.cattle.io/v1 HelmChart aws-cloud-controller-manager in\n"
    "              spec.rkeConfig.additionalManifest (added when absent; the other\n"
    "              documents keep their text) with --enable-leader-migration=true, on\n"
    "              control-plane nodes. Then wait for the DaemonSet to roll out.\n"
    "  migrate     cloud-provider-name external, enable-leader-migration removed from the\n"
    "              kube-controller-manager args, spec.kubernetesVersion from\n"
    "              --kubernetes-version. Then check every node's providerID.\n"
    "  finalize    --enable-leader-migration=true removed from the chart's args.\n"
    "Each phase is idempotent. Keys keep their order, but a phase that changes the file\n"
    "re-emits it without its comments. Exit codes: 0 done (or nothing to change), 2\n"
    "refused, nothing written.";

constexpr char kRkeFooter[] =
    "Phases, in order (each refuses a file not in the state it starts from):\n"
    "  prepare   services.kube-controller.extra_args.enable-leader-migration \"true\";\n"
    "            cloud_provider.name stays aws. Then cordon the controlplane nodes and\n"
    "            install the aws-cloud-controller-manager chart with the Helm values\n"
    "            printed (with --enable-leader-migration=true).\n"
    "  migrate   cloud_provider.name external-aws, useInstanceMetadataHostname (from\n"
    "            --use-instance-metadata-hostname, default true: required for node-driver\n"
    "            clusters and custom clusters without --node-name), the argument removed,\n"
    "            kubernetes_version from --kubernetes-version. Then update the cluster.\n"
    "  finalize  the file is unchanged; upgrade the chart with the Helm values printed\n"
    "            (without --enable-leader-migration=true).\n"
    "The Helm values go to stderr (the file to stdout), or to --helm-values FILE.\n"
    "Each phase is idempotent. Keys keep their order, but a phase that changes the file\n"
    "re-emits it without its comments. Exit codes: 0 done (or nothing to change), 2\n"
    "refused, nothing written.";

void AddPhaseCommand(CLI::App& rancher, CommandContext& context, Distribution distribution) {
  const bool rke2 = distribution == Distribution::kRke2;
  CLI::App* command = rancher.add_subcommand(
      rke2 ? "rke2" : "rke",
      rke2 ? "Change a Rancher provisioning.cattle.io/v1 Cluster (RKE2) for one phase of the move "
             "(Rancher's guide, RKE2 tab)"
           : "Change an RKE cluster.yml (plain, or Rancher's rancher_kubernetes_engine_config) for "
             "one phase of the move, and print the chart's Helm values (Rancher's guide, RKE tab)");
  command->footer(rke2 ? kRke2Footer : kRkeFooter);
  auto flags = std::make_shared<RancherFlags>();
  command
      ->add_option("--phase", flags->phase,
                   rke2 ? "prepare, deploy-ccm, migrate or finalize"
                        : "prepare, migrate or finalize")
      ->required();
  command
      ->add_option("-f,--file", flags->file,
                   rke2 ? "The Cluster's YAML (e.g. from `kubectl get "
                          "clusters.provisioning.cattle.io -n fleet-default NAME -o yaml`); - "
                          "reads it from standard input"
                        : "cluster.yml, or Rancher's cluster YAML with "
                          "rancher_kubernetes_engine_config; - reads it from standard input")
      ->required();
  command->add_option("--kubernetes-version", flags->kubernetes_version,
                      rke2 ? "migrate: also set spec.kubernetesVersion (e.g. v1.27.10+rke2r1)"
                           : "migrate: also set kubernetes_version (e.g. v1.27.10-rancher1-1)");
  if (!rke2) {
    command->add_option("--use-instance-metadata-hostname", flags->use_instance_metadata_hostname,
                        "migrate: cloud_provider.useInstanceMetadataHostname, true (default) or "
                        "false");
    command->add_option("--helm-values", flags->helm_values,
                        "Write the chart's Helm values for this phase to FILE (atomically) "
                        "instead of stderr");
  }
  command->add_option("-o,--output-file", flags->output,
                      "Write the changed file to FILE atomically (may be -f's file) instead of "
                      "stdout; nothing is written when the phase is refused");
  command->add_flag("--diff", flags->diff,
                    "Print the unified diff from -f's file to the changed file instead of the "
                    "file");
  command->callback([&context, distribution, flags] {
    context.exit_code = Run(context, distribution, *flags);
  });
}

}  // namespace

void AddRancherCommands(CLI::App& app, CommandContext& context) {
  // `rancher check|cordon|uncordon` (rancher_check_commands.cc) share the subcommand; whichever
  // group is added first creates it. (This CLI11 has no get_subcommand_no_throw.)
  std::vector<CLI::App*> existing =
      app.get_subcommands([](CLI::App* command) { return command->get_name() == "rancher"; });
  CLI::App* rancher = existing.empty() ? nullptr : existing.front();
  if (rancher == nullptr) {
    rancher = app.add_subcommand("rancher", "Move a Rancher RKE2 or RKE cluster to the external "
                                            "AWS cloud provider, as Rancher's guide does");
  }
  rancher->require_subcommand(1);
  AddPhaseCommand(*rancher, context, Distribution::kRke2);
  AddPhaseCommand(*rancher, context, Distribution::kRke);
}

}  // namespace handoff::ctl
