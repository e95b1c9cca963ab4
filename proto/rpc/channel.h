// Client channels to the coordinator, shared by the agent and handoffctl: always mutual TLS (the
// handoff CA, the caller's certificate and key), keepalive pings so a dead peer is noticed while a
// stream is idle, and an optional name to verify the coordinator's certificate against.
#ifndef HANDOFF_PROTO_RPC_CHANNEL_H_
#define HANDOFF_PROTO_RPC_CHANNEL_H_

#include <chrono>
#include <memory>
#include <string>

#include "grpcpp/channel.h"

namespace handoff::rpc {

// PEM contents (the caller reads the files, so errors name them).
struct ClientTls {
  std::string ca_pem;    // the handoff CA: the coordinator's certificate must chain to it
  std::string cert_pem;  // this client's certificate (agent: CN = node name)
  std::string key_pem;
  // The name the coordinator's certificate must carry, when it differs from the address's host
  // (e.g. dialing an IP whose certificate names only a DNS name). "" = the address's host.
  std::string server_name;
};

struct ChannelOptions {
  // How often to ping an idle connection, and how long to wait for the answer.
  std::chrono::milliseconds keepalive_time{10000};
  std::chrono::milliseconds keepalive_timeout{5000};
  // Upper bound of gRPC's own reconnect backoff.
  std::chrono::milliseconds max_reconnect_backoff{30000};
};

// A channel to `address` ("host:port"); connects lazily. Never plaintext.
std::shared_ptr<grpc::Channel> CreateSecureChannel(const std::string& address, const ClientTls& tls,
                                                   const ChannelOptions& options = {});

}  // namespace handoff::rpc

#endif  // HANDOFF_PROTO_RPC_CHANNEL_H_
