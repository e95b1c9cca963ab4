#include "coordinator/kube/kubeadm_join.h"

#include <cctype>
#include <string_view>

#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff::kube {
namespace {

bool AllOf(std::string_view text, int (*test)(int)) {
  for (char c : text) {
    if (test(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

int IsLowerAlnum(int c) { return (std::islower(c) != 0 || std::isdigit(c) != 0) ? 1 : 0; }

// kubeadm's bootstrap token: [a-z0-9]{6}.[a-z0-9]{16} (its id, then its secret).
bool IsBootstrapToken(std::string_view token) {
  return token.size() == 23 && token[6] == '.' && AllOf(token.substr(0, 6), IsLowerAlnum) &&
         AllOf(token.substr(7), IsLowerAlnum);
}

// A public key pin as kubeadm reads it: sha256:<64 hex digits>, the only format it takes.
bool IsCaCertHash(std::string_view hash) {
  constexpr std::string_view kPrefix = "sha256:";
  return hash.size() == kPrefix.size() + 64 && hash.substr(0, kPrefix.size()) == kPrefix &&
         AllOf(hash.substr(kPrefix.size()), [](int c) { return std::isxdigit(c); });
}

absl::Status CheckDiscovery(const WorkerJoinOptions& options) {
  const bool by_token = !options.token.empty() || !options.api_server_endpoint.empty() ||
                        !options.ca_cert_hashes.empty() || options.unsafe_skip_ca_verification;
  if (!options.discovery_file.empty()) {
    if (by_token) {
      return absl::InvalidArgumentError(
          "--discovery-file and the bootstrap token's flags (--token, --api-server-endpoint, "
          "--discovery-token-ca-cert-hash) are two ways of discovery: give one");
    }
    // kubeadm takes a file on the machine (it must exist there when kubeadm join runs) or an
    // HTTPS URL.
    if (options.discovery_file[0] != '/' && options.discovery_file.rfind("https://", 0) != 0) {
      return absl::InvalidArgumentError(
          StrCat("--discovery-file ", options.discovery_file,
                 ": neither an absolute path on the machine nor an https:// URL"));
    }
    return absl::OkStatus();
  }
  constexpr std::string_view kHint =
      " (`kubeadm token create --print-join-command` on a control-plane node prints the "
      "endpoint, a token and the CA's hash)";
  if (options.api_server_endpoint.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--api-server-endpoint is missing: the control plane's HOST:PORT", kHint));
  }
  const size_t colon = options.api_server_endpoint.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == options.api_server_endpoint.size() ||
      !AllOf(std::string_view(options.api_server_endpoint).substr(colon + 1),
             [](int c) { return std::isdigit(c); })) {
    return absl::InvalidArgumentError(StrCat("--api-server-endpoint ",
                                             options.api_server_endpoint,
                                             ": not HOST:PORT (e.g. 10.0.0.10:6443)"));
  }
  if (!IsBootstrapToken(options.token)) {
    return absl::InvalidArgumentError(
        StrCat(options.token.empty() ? std::string("--token is missing")
                                     : StrCat("--token ", options.token, ": not a bootstrap token"),
               ": kubeadm's [a-z0-9]{6}.[a-z0-9]{16}", kHint));
  }
  if (options.ca_cert_hashes.empty() && !options.unsafe_skip_ca_verification) {
    return absl::InvalidArgumentError(
        StrCat("--discovery-token-ca-cert-hash is missing: the machine could not tell the "
               "control plane's CA from any other (--discovery-token-unsafe-skip-ca-verification "
               "goes without)",
               kHint));
  }
  for (const std::string& hash : options.ca_cert_hashes) {
    if (!IsCaCertHash(hash)) {
      return absl::InvalidArgumentError(StrCat("--discovery-token-ca-cert-hash ", hash,
                                               ": not sha256:<64 hex digits>"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RenderWorkerJoinConfiguration(const WorkerJoinOptions& options) {
  if (absl::Status discovery = CheckDiscovery(options); !discovery.ok()) return discovery;
  const bool external = options.target == WorkerJoinTarget::kExternal;
  if (external) {
    for (const auto& [flag, path] :
         {std::pair<std::string_view, const std::string&>{"--credential-provider-config",
                                                          options.credential_provider_config},
          {"--credential-provider-bin-dir", options.credential_provider_bin_dir}}) {
      if (path.empty() || path[0] != '/') {
        return absl::InvalidArgumentError(
            StrCat(flag, " ", path.empty() ? std::string("is empty") : path,
                   ": the kubelet needs an absolute path on the machine"));
      }
    }
  }

  YAML::Node root(YAML::NodeType::Map);
  root["apiVersion"] = "kubeadm.k8s.io/v1beta3";
  root["kind"] = "JoinConfiguration";
  YAML::Node discovery(YAML::NodeType::Map);
  if (!options.discovery_file.empty()) {
    discovery["file"]["kubeConfigPath"] = options.discovery_file;
  } else {
    YAML::Node token(YAML::NodeType::Map);
    token["apiServerEndpoint"] = options.api_server_endpoint;
    token["token"] = options.token;
    if (!options.ca_cert_hashes.empty()) {
      YAML::Node hashes(YAML::NodeType::Sequence);
      for (const std::string& hash : options.ca_cert_hashes) hashes.push_back(hash);
      token["caCertHashes"] = hashes;
    }
    if (options.unsafe_skip_ca_verification) {
      // A plain scalar (tag "?"), which EmitYaml leaves unquoted: kubeadm decodes a bool.
      YAML::Node yes("true");
      yes.SetTag("?");
      token["unsafeSkipCAVerification"] = yes;
    }
    discovery["bootstrapToken"] = token;
  }
  root["discovery"] = discovery;
  YAML::Node registration(YAML::NodeType::Map);
  if (!options.node_name.empty()) registration["name"] = options.node_name;
  if (!options.cri_socket.empty()) registration["criSocket"] = options.cri_socket;
  // kubeadm sorts the flags it writes into kubeadm-flags.env; the map is written in its order.
  YAML::Node args(YAML::NodeType::Map);
  args["cloud-provider"] = external ? "external" : "aws";
  if (external) {
    args["image-credential-provider-bin-dir"] = options.credential_provider_bin_dir;
    args["image-credential-provider-config"] = options.credential_provider_config;
  }
  registration["kubeletExtraArgs"] = args;
  root["nodeRegistration"] = registration;
  return EmitYaml(root);
}

}  // namespace handoff::kube
