#include "proto/rpc/channel.h"

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace handoff::rpc {

std::shared_ptr<grpc::Channel> CreateSecureChannel(const std::string& address, const ClientTls& tls,
                                                   const ChannelOptions& options) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.ca_pem;
  ssl.pem_cert_chain = tls.cert_pem;
  ssl.pem_private_key = tls.key_pem;
  grpc::ChannelArguments arguments;
  if (!tls.server_name.empty()) arguments.SetSslTargetNameOverride(tls.server_name);
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options.keepalive_time.count()));
  arguments.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                   static_cast<int>(options.keepalive_timeout.count()));
  // The agent's stream is idle between commands; pings must flow without calls in progress, or a
  // coordinator that vanished would go unnoticed until the next command.
  arguments.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  arguments.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                   static_cast<int>(options.max_reconnect_backoff.count()));
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), arguments);
}

}  // namespace handoff::rpc
