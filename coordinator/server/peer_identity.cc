#include "coordinator/server/peer_identity.h"

#include <algorithm>

#include "common/base/strings.h"
#include "common/kube/kubeconfig.h"
#include "grpc/grpc_security_constants.h"

namespace handoff::server {
namespace {

bool InGroup(const PeerIdentity& identity, std::string_view group) {
  return std::find(identity.organizations.begin(), identity.organizations.end(), group) !=
         identity.organizations.end();
}

std::string Describe(const PeerIdentity& identity) {
  return StrCat(
      "CN=", identity.common_name,
      identity.organizations.empty() ? "" : StrCat(", O=", StrJoin(identity.organizations, ",")));
}

// A certificate is one party's: one in both groups could act as an agent and approve its own
// moves as an operator, and the audit history could not say which it was.
absl::Status CheckOneRole(const PeerIdentity& identity) {
  if (InGroup(identity, kAgentsGroup) && InGroup(identity, kOperatorsGroup)) {
    return absl::PermissionDeniedError(
        StrCat("certificate ", Describe(identity), " is in both O=", kAgentsGroup, " and O=",
               kOperatorsGroup,
               "; a certificate is either an agent's or an operator's, so it is refused for both: "
               "issue one of each (handoffctl certs issue --node or --operator)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PeerIdentity> IdentityOf(const grpc::AuthContext& context) {
  // The handshake already verified the chain against the handoff CA (the server requires and
  // verifies client certificates); this only reads the names.
  std::vector<grpc::string_ref> pem = context.FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (!context.IsPeerAuthenticated() || pem.empty()) {
    return absl::UnauthenticatedError("no verified client certificate");
  }
  absl::StatusOr<kube::CertificateSubject> subject =
      kube::ParseCertificateSubject(std::string_view(pem.front().data(), pem.front().size()));
  if (!subject.ok()) {
    return absl::UnauthenticatedError(
        StrCat("the client certificate cannot be read: ", subject.status().message()));
  }
  return PeerIdentity{subject->common_name, subject->organizations};
}

absl::Status AuthorizeAgent(const PeerIdentity& identity, const std::string& claimed_node) {
  if (absl::Status one_role = CheckOneRole(identity); !one_role.ok()) return one_role;
  if (!InGroup(identity, kAgentsGroup)) {
    return absl::PermissionDeniedError(
        StrCat("certificate ", Describe(identity), " is not an agent's (O=", kAgentsGroup, ")"));
  }
  if (claimed_node.empty() || identity.common_name != claimed_node) {
    return absl::PermissionDeniedError(StrCat("certificate ", Describe(identity),
                                              " may register only as node ", identity.common_name,
                                              ", not as \"", claimed_node, "\""));
  }
  return absl::OkStatus();
}

absl::Status AuthorizeOperator(const PeerIdentity& identity) {
  if (absl::Status one_role = CheckOneRole(identity); !one_role.ok()) return one_role;
  if (!InGroup(identity, kOperatorsGroup)) {
    return absl::PermissionDeniedError(StrCat("certificate ", Describe(identity),
                                              " is not an operator's (O=", kOperatorsGroup, ")"));
  }
  return absl::OkStatus();
}

}  // namespace handoff::server
