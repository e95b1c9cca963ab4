// Who is calling: the subject of the client certificate the TLS handshake verified, and what it
// may do. Agents are O=handoff:agents with CN = their node; operators are O=handoff:operators; a
// certificate in both groups may act as neither.
#ifndef HANDOFF_COORDINATOR_SERVER_PEER_IDENTITY_H_
#define HANDOFF_COORDINATOR_SERVER_PEER_IDENTITY_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/security/auth_context.h"

namespace handoff::server {

inline constexpr std::string_view kAgentsGroup = "handoff:agents";
inline constexpr std::string_view kOperatorsGroup = "handoff:operators";

struct PeerIdentity {
  std::string common_name;
  std::vector<std::string> organizations;
};

// The verified client certificate's subject; Unauthenticated when the call carries none.
absl::StatusOr<PeerIdentity> IdentityOf(const grpc::AuthContext& context);

// An agent may register only as the node its certificate names. PermissionDenied otherwise,
// naming both, and for a certificate that is in both groups (it is refused for either role).
absl::Status AuthorizeAgent(const PeerIdentity& identity, const std::string& claimed_node);
// PermissionDenied unless the certificate is an operator's, and only an operator's.
absl::Status AuthorizeOperator(const PeerIdentity& identity);

}  // namespace handoff::server

#endif  // HANDOFF_COORDINATOR_SERVER_PEER_IDENTITY_H_
