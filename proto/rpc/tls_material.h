// The TLS material of a daemon's mutual TLS (the handoff CA, its own certificate and key) as gRPC
// credentials take it: a certificate provider, either over fixed PEMs or over files that an
// operator replaces while the daemon runs, so that new connections use the new certificate
// without a restart.
//
// Why not gRPC's FileWatcherCertificateProvider over the operator's files alone: gRPC 1.51 reads
// the key and the certificate as two files and hands whatever it read to its TLS stack, which
// refuses a key that is not the certificate's ("Invalid private key", "Update handshaker factory
// failed") after it has dropped the previous pair, so every handshake fails until a matching
// pair is on disk: a rotation that renames the certificate before the key, or a wrong file,
// takes the server off the air. Here the operator's files are read and checked first; only a
// consistent set goes to gRPC, the previous one stays in use otherwise, and the caller hears why.
#ifndef HANDOFF_PROTO_RPC_TLS_MATERIAL_H_
#define HANDOFF_PROTO_RPC_TLS_MATERIAL_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/fs/file_system.h"
#include "grpcpp/security/tls_certificate_provider.h"

namespace handoff::rpc {

// PEM contents.
struct TlsPems {
  std::string ca_pem;    // the handoff CA (one certificate or a bundle)
  std::string cert_pem;  // this daemon's certificate, then any intermediates
  std::string key_pem;   // its private key

  bool operator==(const TlsPems& other) const {
    return ca_pem == other.ca_pem && cert_pem == other.cert_pem && key_pem == other.key_pem;
  }
  bool operator!=(const TlsPems& other) const { return !(*this == other); }
};

// Absolute paths of the same.
struct TlsFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

struct TlsWatchOptions {
  // How often the files are read again. gRPC takes the material checked here within a second
  // more. Must be positive.
  absl::Duration refresh_interval = absl::Seconds(60);
  // The caller's own condition on the files' content, checked after the ones of Watch (e.g. the
  // agent's certificate must still name its node): at start and at each change. An error
  // refuses the set like those do, and should name the file.
  std::function<absl::Status(const TlsPems&)> check;
  // Called on the watcher's thread (or Refresh's caller) when the files changed and were taken,
  // with what is now served; and when they changed and were refused (the previous material
  // stays in use), with why, naming the files. Each change is reported once, not at every
  // refresh. They must not block, nor call back into the TlsMaterial.
  std::function<void(const TlsPems&)> on_reloaded;
  std::function<void(const absl::Status&)> on_refused;
  // Where the files are read; null: the host's file system.
  std::shared_ptr<const FileSystem> file_system;
};

// Thread-safe. Keep it alive as long as credentials built on provider() are in use (they hold
// the provider, which stays valid on its own; the watching stops with this object).
class TlsMaterial {
 public:
  // The PEMs as they are, never re-read. InvalidArgument when the CA or the certificate does not
  // parse or the key is not the certificate's.
  static absl::StatusOr<std::shared_ptr<TlsMaterial>> Fixed(TlsPems pems);

  // The files' content, read and checked now (InvalidArgument naming the file: unreadable, not
  // PEM, or the key not the certificate's), then again every `options.refresh_interval` on a
  // thread of its own. A change is taken only whole and consistent (the CA and the certificate
  // parse, the key is the certificate's); a refused one leaves the previous material in use and
  // is reported through `options.on_refused`.
  static absl::StatusOr<std::shared_ptr<TlsMaterial>> Watch(const TlsFiles& files,
                                                            TlsWatchOptions options);

  TlsMaterial(const TlsMaterial&) = delete;
  TlsMaterial& operator=(const TlsMaterial&) = delete;
  ~TlsMaterial();

  // What gRPC serves now, or within a second (see TlsWatchOptions::refresh_interval).
  TlsPems Current() const;

  // For grpc::experimental::TlsServerCredentialsOptions / TlsChannelCredentialsOptions, with
  // watch_root_certs() and watch_identity_key_cert_pairs().
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider() const {
    return provider_;
  }

  // Reads the files now rather than at the next interval (fixed material: OK). OK when the
  // files' content is what is served; the reason otherwise (also when it was reported before).
  absl::Status Refresh();

 private:
  class StagedProvider;
  TlsMaterial() = default;
  void WatchLoop();

  // Set once before any thread starts.
  TlsFiles files_;
  TlsWatchOptions options_;
  std::shared_ptr<StagedProvider> staged_;  // null for fixed material
  std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider_;

  mutable std::mutex mutex_;
  TlsPems current_;  // guarded by mutex_

  // Refreshes one at a time (the watcher's thread and Refresh's callers).
  std::mutex refresh_mutex_;
  absl::StatusOr<TlsPems> last_read_;  // the files' content (or read error) last judged
  absl::Status last_verdict_;          // and what was decided about it

  std::mutex stop_mutex_;
  std::condition_variable stop_changed_;
  bool stopping_ = false;  // guarded by stop_mutex_
  std::thread watcher_;
};

}  // namespace handoff::rpc

#endif  // HANDOFF_PROTO_RPC_TLS_MATERIAL_H_
