// Kubeconfig files (clusters, users, contexts, current-context) as kubectl reads them, reduced to
// what one connection needs. Parsing is pure; the files a kubeconfig names (CA, client
// certificate and key, token file) are read through the injected FileSystem.
#ifndef HANDOFF_COMMON_KUBE_KUBECONFIG_H_
#define HANDOFF_COMMON_KUBE_KUBECONFIG_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fs/file_system.h"

// OpenSSL's X509 (<openssl/types.h>), declared here so that this header needs no OpenSSL.
struct x509_st;

namespace handoff::kube {

// Everything needed to reach and authenticate to one API server.
struct ClusterCredentials {
  std::string kubeconfig;    // the file it came from, for messages
  std::string context;       // the context used
  std::string cluster_name;  // clusters[].name
  std::string user_name;     // users[].name
  std::string server;        // "https://10.0.0.1:6443", no trailing slash
  std::string ca_pem;        // "" = the system's trusted CAs
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string bearer_token;
  bool insecure_skip_tls_verify = false;
  std::string namespace_name;  // the context's namespace, "" when unset
  // The user as the API server will see it: the client certificate's CN when there is one,
  // else the kubeconfig's user name.
  std::string identity;
  // Things an operator must hear about (insecure-skip-tls-verify).
  std::vector<std::string> warnings;
};

// OK when `value` can be sent as an HTTP header's value (the bearer token): no control character
// but horizontal tab (RFC 9110 field-value). A CR or LF would end the header and start another
// one of the value's choosing; Go's net/http, and so client-go, refuses such a value too.
// InvalidArgument saying which character and where, never the value (it is a secret).
absl::Status CheckHeaderValue(std::string_view value);

// Reads a file a kubeconfig names (already resolved against the kubeconfig's directory).
using KubeconfigFileReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;

// Parses kubeconfig `text` read from `path`. `context` overrides current-context when not empty.
// Relative file paths are taken against the directory of `path`, as kubectl does. Errors name
// the file and the field, and say what to change. Unsupported authentication (exec plugins,
// auth-provider, basic auth) and proxy-url/tls-server-name are errors rather than being ignored.
absl::StatusOr<ClusterCredentials> ParseKubeconfig(std::string_view text, const std::string& path,
                                                   const std::string& context,
                                                   const KubeconfigFileReader& read_file);

// Reads `path` (absolute) and the files it names through `fs`, then parses it.
absl::StatusOr<ClusterCredentials> LoadKubeconfig(const FileSystem& fs, const std::string& path,
                                                  const std::string& context);

// The subject common name (CN) and organisations (O, Kubernetes groups) of a PEM certificate;
// an error when it does not parse.
struct CertificateSubject {
  std::string common_name;
  std::vector<std::string> organizations;
};
// The subject of an OpenSSL certificate (an X509*): CN and each O, as kube-apiserver's x509
// authenticator reads them. Shared with the fake API server, which authenticates the same way.
CertificateSubject SubjectOfCertificate(const ::x509_st* certificate);
absl::StatusOr<CertificateSubject> ParseCertificateSubject(std::string_view pem);

}  // namespace handoff::kube

#endif  // HANDOFF_COMMON_KUBE_KUBECONFIG_H_
