#include "agent/cli/worker_scope.h"

#include <utility>

#include "agent/cloud/instance_tags.h"
#include "agent/engine/credential_provider.h"
#include "agent/engine/node_snapshot.h"
#include "agent/verify/credential_probe.h"
#include "common/base/strings.h"
#include "common/fs/read_limit.h"
#include "common/kube/kubeconfig.h"

namespace handoff {
namespace {

// How long a probe of the credential provider may take: it asks ECR once.
constexpr absl::Duration kProbeTimeout = absl::Seconds(30);

}  // namespace

absl::StatusOr<std::optional<CredentialProviderCall>> NamedCredentialProvider(
    const FileSystem& fs, const Settings& settings) {
  absl::StatusOr<NodeSnapshot> snapshot = ReadNodeSnapshot(fs, settings);
  if (!snapshot.ok()) return snapshot.status();
  absl::StatusOr<KubeletCommandLine> flags = ExpectedKubeletFlags(*snapshot);
  if (!flags.ok()) return flags.status();
  const KubeletFlag* config = flags->Effective("image-credential-provider-config");
  if (config == nullptr || !config->value || config->value->empty()) {
    return std::optional<CredentialProviderCall>();
  }
  const KubeletFlag* bin_dir = flags->Effective("image-credential-provider-bin-dir");
  if (bin_dir == nullptr || !bin_dir->value || bin_dir->value->empty()) {
    return absl::FailedPreconditionError(
        StrCat("the kubelet is given --image-credential-provider-config=", *config->value,
               " without --image-credential-provider-bin-dir, and would not start"));
  }
  absl::StatusOr<std::string> text = fs.ReadFile(*config->value, kCredentialProviderConfigRead);
  if (!text.ok()) return text.status();
  absl::StatusOr<CredentialProviderCall> call =
      EcrCredentialProviderCall(*text, *config->value, *bin_dir->value);
  if (!call.ok()) return call.status();
  return std::optional<CredentialProviderCall>(*std::move(call));
}

absl::StatusOr<CredentialProviderCall> CredentialProviderAfterMove(const FileSystem& fs,
                                                                   const Settings& settings) {
  absl::StatusOr<std::optional<CredentialProviderCall>> named =
      NamedCredentialProvider(fs, settings);
  if (!named.ok()) return named.status();
  if (*named) return **named;
  // What the move writes, unless a file at worker.credentialProviderConfig is kept (the planner
  // keeps one that names ecr-credential-provider).
  absl::StatusOr<std::string> existing =
      fs.ReadFile(settings.worker.credential_provider_config, kCredentialProviderConfigRead);
  if (!existing.ok() && !absl::IsNotFound(existing.status())) return existing.status();
  return EcrCredentialProviderCall(existing.ok() ? *existing : EcrCredentialProviderConfig(),
                                   settings.worker.credential_provider_config,
                                   settings.worker.credential_provider_bin_dir);
}

absl::StatusOr<std::unique_ptr<WorkerScope>> WorkerScope::Open(
    Settings& settings, const FileSystem& fs, CommandRunner& commands, Clock& clock,
    const KubeTransportFactory& transport) {
  if (settings.worker.ecr_registry.empty()) {
    InstanceMetadataOptions metadata;
    metadata.endpoint = settings.instance_metadata_endpoint;
    absl::StatusOr<std::string> registry = ReadEcrRegistry(metadata);
    if (!registry.ok()) {
      return absl::FailedPreconditionError(
          StrCat("the ECR registry the credential provider must answer for is unknown: ",
                 registry.status().message()));
    }
    settings.worker.ecr_registry = *registry;
  }
  absl::StatusOr<kube::ClusterCredentials> credentials =
      kube::LoadKubeconfig(fs, settings.worker.kubeconfig, "");
  if (!credentials.ok()) {
    return absl::FailedPreconditionError(
        StrCat("the kubelet's kubeconfig (worker.kubeconfig) cannot be used to read this node's "
               "Node: ", credentials.status().message()));
  }
  absl::StatusOr<std::unique_ptr<kube::HttpTransport>> http = transport(*credentials);
  if (!http.ok()) return http.status();

  std::unique_ptr<WorkerScope> scope(new WorkerScope(fs, commands));
  scope->registry_ = settings.worker.ecr_registry;
  scope->node_name_ = settings.worker.node_name;
  scope->client_ = std::make_unique<kube::KubeClient>(*std::move(http), clock,
                                                      kube::ClientOptionsFor(*credentials));
  WorkerProofOptions options;
  options.node_name = settings.worker.node_name;
  options.ecr_registry = settings.worker.ecr_registry;
  options.crictl = settings.worker.crictl;
  options.crictl.insert(options.crictl.end(), {"ps", "-o", "json"});
  scope->proof_ = std::make_unique<WorkerKubeletProof>(
      options, *scope->client_, commands, clock,
      [&fs, settings] { return NamedCredentialProvider(fs, settings); });
  return scope;
}

BeforeMove WorkerScope::Guard(BeforeMove inner) {
  return [this, inner = std::move(inner)](NodeState from, NodeState to,
                                          const Settings& settings)
             -> absl::StatusOr<std::vector<std::string>> {
    std::vector<std::string> notes;
    if (inner) {
      absl::StatusOr<std::vector<std::string>> lines = inner(from, to, settings);
      if (!lines.ok()) return lines.status();
      notes = *std::move(lines);
    }
    if (to != NodeState::kExternal) return notes;
    absl::StatusOr<CredentialProviderCall> call = CredentialProviderAfterMove(fs_, settings);
    if (!call.ok()) return call.status();
    absl::Status answered = ProbeCredentialProvider(commands_, *call, registry_, kProbeTimeout);
    if (!answered.ok()) {
      return absl::Status(answered.code(),
                          StrCat(answered.message(), "; nothing was written"));
    }
    absl::StatusOr<kube::Json> node = client_->Get(kube::ObjectRef{&kube::kNodes, "", node_name_});
    if (!node.ok()) {
      return absl::FailedPreconditionError(
          StrCat("this kubelet's Node ", node_name_, " cannot be read with worker.kubeconfig, so "
                 "no one could prove the kubelet keeps it; nothing was written: ",
                 node.status().message()));
    }
    notes.push_back(StrCat(call->binary, " answered for ", registry_));
    return notes;
  };
}

}  // namespace handoff
