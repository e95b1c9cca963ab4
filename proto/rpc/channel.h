// Client channels to the coordinator, shared by the agent and handoffctl: always mutual TLS (the
// handoff CA, the caller's certificate and key, fixed or re-read from their files), keepalive
// pings so a dead peer is noticed while a stream is idle, and an optional name to verify the
// coordinator's certificate against.
#ifndef HANDOFF_PROTO_RPC_CHANNEL_H_
#define HANDOFF_PROTO_RPC_CHANNEL_H_

#include <chrono>
#include <memory>
#include <string>

#include "grpcpp/channel.h"
#include "proto/rpc/tls_material.h"

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

// A channel to `address` ("host:port"); connects lazily. Never plaintext. The coordinator's
// certificate must chain to the CA and carry the address's host (or `tls.server_name`).
std::shared_ptr<grpc::Channel> CreateSecureChannel(const std::string& address, const ClientTls& tls,
                                                   const ChannelOptions& options = {});

// The same with the material `tls` holds at each connection: a reconnect presents the
// certificate (and trusts the CA) of the files as they are then. The caller keeps `tls` alive
// while the channel is in use, for its files to be watched. `server_name` as in ClientTls.
std::shared_ptr<grpc::Channel> CreateSecureChannel(const std::string& address,
                                                   const TlsMaterial& tls,
                                                   const std::string& server_name,
                                                   const ChannelOptions& options = {});

}  // namespace handoff::rpc

#endif  // HANDOFF_PROTO_RPC_CHANNEL_H_
