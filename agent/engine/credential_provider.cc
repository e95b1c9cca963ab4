#include "agent/engine/credential_provider.h"

#include <algorithm>

#include "agent/engine/node_snapshot.h"
#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff {

const std::vector<std::string>& EcrImagePatterns() {
  static const std::vector<std::string> kPatterns = {
      "*.dkr.ecr.*.amazonaws.com",           "*.dkr.ecr.*.amazonaws.com.cn",
      "*.dkr.ecr-fips.*.amazonaws.com",      "*.dkr.ecr.us-iso-east-1.c2s.ic.gov",
      "*.dkr.ecr.us-isob-east-1.sc2s.sgov.gov"};
  return kPatterns;
}

std::string EcrCredentialProviderConfig() {
  std::string images;
  for (const std::string& pattern : EcrImagePatterns()) {
    images += StrCat("  - \"", pattern, "\"\n");
  }
  return StrCat(
      "# Written by handoff-agent when this node's kubelet went external: the kubelet fetches ECR\n"
      "# credentials through ", kEcrCredentialProvider,
      " (--image-credential-provider-config).\n"
      "apiVersion: kubelet.config.k8s.io/v1\n"
      "kind: CredentialProviderConfig\n"
      "providers:\n"
      "- name: ",
      kEcrCredentialProvider,
      "\n"
      "  matchImages:\n",
      images,
      "  defaultCacheDuration: \"12h\"\n"
      "  apiVersion: credentialprovider.kubelet.k8s.io/v1\n");
}

absl::Status CheckEcrCredentialProviderConfig(std::string_view text, std::string_view source) {
  auto refuse = [&](std::string_view what) {
    return absl::FailedPreconditionError(
        StrCat(source, ": ", what, "; the external kubelet would pull no image from ECR"));
  };
  absl::StatusOr<YAML::Node> root = LoadYaml(text, source);
  if (!root.ok()) return refuse(std::string(root.status().message()));
  const YAML::Node& doc = *root;
  if (!HasField(doc, "kind", YAML::NodeType::Scalar) ||
      doc["kind"].Scalar() != "CredentialProviderConfig") {
    return refuse("kind is not CredentialProviderConfig");
  }
  if (!HasField(doc, "apiVersion", YAML::NodeType::Scalar) ||
      (doc["apiVersion"].Scalar() != "kubelet.config.k8s.io/v1" &&
       doc["apiVersion"].Scalar() != "kubelet.config.k8s.io/v1beta1")) {
    return refuse("apiVersion is not kubelet.config.k8s.io/v1");
  }
  if (!HasField(doc, "providers", YAML::NodeType::Sequence)) {
    return refuse("providers is not a list");
  }
  for (const YAML::Node& provider : doc["providers"]) {
    if (!provider.IsMap() || !HasField(provider, "name", YAML::NodeType::Scalar) ||
        provider["name"].Scalar() != kEcrCredentialProvider) {
      continue;
    }
    if (!HasField(provider, "matchImages", YAML::NodeType::Sequence)) {
      return refuse(StrCat("the ", kEcrCredentialProvider, " provider has no matchImages list"));
    }
    for (const YAML::Node& image : provider["matchImages"]) {
      if (image.IsScalar() && image.Scalar() == EcrImagePatterns().front()) {
        return absl::OkStatus();
      }
    }
    return refuse(StrCat("the ", kEcrCredentialProvider, " provider does not match ",
                         EcrImagePatterns().front()));
  }
  return refuse(StrCat("no provider is named ", kEcrCredentialProvider));
}

std::vector<std::string> CredentialProviderCall::Argv() const {
  std::vector<std::string> argv;
  if (!env.empty()) {
    argv.push_back("env");
    for (const auto& [name, value] : env) argv.push_back(StrCat(name, "=", value));
  }
  argv.push_back(binary);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

absl::StatusOr<CredentialProviderCall> EcrCredentialProviderCall(std::string_view text,
                                                                 std::string_view source,
                                                                 std::string_view bin_dir) {
  if (absl::Status checked = CheckEcrCredentialProviderConfig(text, source); !checked.ok()) {
    return checked;
  }
  auto refuse = [&](std::string_view what) {
    return absl::FailedPreconditionError(StrCat(source, ": the ", kEcrCredentialProvider,
                                                " provider's ", what));
  };
  absl::StatusOr<YAML::Node> root = LoadYaml(text, source);
  if (!root.ok()) return root.status();
  for (const YAML::Node& provider : (*root)["providers"]) {
    if (!provider.IsMap() || !HasField(provider, "name", YAML::NodeType::Scalar) ||
        provider["name"].Scalar() != kEcrCredentialProvider) {
      continue;
    }
    CredentialProviderCall call;
    call.binary = StrCat(bin_dir, bin_dir.empty() || bin_dir.back() == '/' ? "" : "/",
                         kEcrCredentialProvider);
    if (!HasField(provider, "apiVersion", YAML::NodeType::Scalar)) {
      return refuse("apiVersion is missing (credentialprovider.kubelet.k8s.io/v1)");
    }
    call.api_version = provider["apiVersion"].Scalar();
    if (call.api_version.rfind("credentialprovider.kubelet.k8s.io/", 0) != 0) {
      return refuse(StrCat("apiVersion ", call.api_version,
                           " is not credentialprovider.kubelet.k8s.io/v1"));
    }
    if (provider["args"]) {
      if (!provider["args"].IsSequence()) return refuse("args is not a list");
      for (const YAML::Node& arg : provider["args"]) {
        if (!arg.IsScalar()) return refuse("args holds an item that is not a string");
        call.args.push_back(arg.Scalar());
      }
    }
    if (provider["env"]) {
      if (!provider["env"].IsSequence()) return refuse("env is not a list");
      for (const YAML::Node& item : provider["env"]) {
        if (!item.IsMap() || !HasField(item, "name", YAML::NodeType::Scalar) ||
            !HasField(item, "value", YAML::NodeType::Scalar) || item["name"].Scalar().empty() ||
            item["name"].Scalar().find('=') != std::string::npos) {
          return refuse("env holds an item without a name and a value");
        }
        call.env.emplace_back(item["name"].Scalar(), item["value"].Scalar());
      }
    }
    return call;
  }
  return refuse("entry is missing");
}

}  // namespace handoff
