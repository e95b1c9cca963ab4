#include "proto/rpc/channel.h"

#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"
#include "grpcpp/support/channel_arguments.h"

namespace handoff::rpc {
namespace {

std::shared_ptr<grpc::Channel> CreateChannel(
    const std::string& address,
    std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider,
    const std::string& server_name, const ChannelOptions& options) {
  // One kind of credentials for fixed and watched material, so that both verify the coordinator
  // alike: its chain against the CA the provider serves (verify_server_certs, the default) and
  // its name against the address's host or the override below (gRPC's hostname verifier, which
  // TLS credentials use when given no other).
  grpc::experimental::TlsChannelCredentialsOptions tls;
  tls.set_certificate_provider(std::move(provider));
  tls.watch_root_certs();
  tls.watch_identity_key_cert_pairs();
  grpc::ChannelArguments arguments;
  if (!server_name.empty()) arguments.SetSslTargetNameOverride(server_name);
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options.keepalive_time.count()));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                   static_cast<int>(options.keepalive_timeout.count()));
  // The agent's stream is idle between commands; pings must flow without calls in progress, or a
  // coordinator that vanished would go unnoticed until the next command.
  arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                   static_cast<int>(options.max_reconnect_backoff.count()));
  return grpc::CreateCustomChannel(address, grpc::experimental::TlsCredentials(tls), arguments);
}

}  // namespace

std::shared_ptr<grpc::Channel> CreateSecureChannel(const std::string& address, const ClientTls& tls,
                                                   const ChannelOptions& options) {
  return CreateChannel(
      address,
      std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
          tls.ca_pem,
          std::vector<grpc::experimental::IdentityKeyCertPair>{{tls.key_pem, tls.cert_pem}}),
      tls.server_name, options);
}

std::shared_ptr<grpc::Channel> CreateSecureChannel(const std::string& address,
                                                   const TlsMaterial& tls,
                                                   const std::string& server_name,
                                                   const ChannelOptions& options) {
  return CreateChannel(address, tls.provider(), server_name, options);
}

}  // namespace handoff::rpc
