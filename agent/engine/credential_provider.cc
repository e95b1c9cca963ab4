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

}  // namespace handoff
