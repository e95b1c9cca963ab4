// Kubeconfig files (handoffctl and the coordinator's --kubeconfig): any text gives credentials or
// an error naming the file, never a crash; credentials that parse can be used as they are (an
// http(s) server without a trailing slash, a certificate with its key, a CA or an explicit
// insecure-skip-tls-verify, an identity). The files a kubeconfig names come from an in-memory
// file system holding the test PKI, so relative and absolute references resolve.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "common/kube/kubeconfig.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/support/memory_file_system.h"

namespace handoff::kube {
namespace {

constexpr char kPath[] = "/etc/kubernetes/admin.conf";

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(HANDOFF_TESTDATA_DIR) + "/kube-tls/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

MemoryFileSystem NodeFiles() {
  MemoryFileSystem fs;
  fs.SetFile("/etc/kubernetes/pki/ca.crt", ReadTestdata("ca.crt"));
  fs.SetFile("/etc/kubernetes/pki/client.crt", ReadTestdata("client.crt"));
  fs.SetFile("/etc/kubernetes/pki/client.key", ReadTestdata("client.key"), 0600);
  fs.SetFile("/etc/kubernetes/token", "  abcdef.0123456789abcdef\n", 0600);
  return fs;
}

void FuzzOne(std::string_view text) {
  static MemoryFileSystem* const files = new MemoryFileSystem(NodeFiles());
  MemoryFileSystem fs = *files;
  fs.SetFile(kPath, std::string(text), 0600);
  for (const char* context : {"", "kubernetes-admin@kubernetes"}) {
    absl::StatusOr<ClusterCredentials> credentials = LoadKubeconfig(fs, kPath, context);
    if (!credentials.ok()) {
      FUZZ_CHECK(credentials.status().message().find(kPath) != std::string_view::npos,
                 "the error does not name the file: " + credentials.status().ToString());
      continue;
    }
    const std::string& server = credentials->server;
    FUZZ_CHECK(server.rfind("https://", 0) == 0 || server.rfind("http://", 0) == 0, server);
    FUZZ_CHECK(server.back() != '/', server);
    FUZZ_CHECK(credentials->client_cert_pem.empty() == credentials->client_key_pem.empty(),
               "a certificate without its key, or a key without its certificate");
    FUZZ_CHECK(!(credentials->insecure_skip_tls_verify && !credentials->ca_pem.empty()),
               "insecure-skip-tls-verify together with a CA");
    FUZZ_CHECK(!credentials->insecure_skip_tls_verify || !credentials->warnings.empty(),
               "insecure-skip-tls-verify without a warning");
    FUZZ_CHECK(!credentials->identity.empty(), "no identity");
    FUZZ_CHECK(!credentials->context.empty(), "no context");
  }
  if (text.size() <= 8192) (void)ParseCertificateSubject(text);
}

}  // namespace
}  // namespace handoff::kube

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::kube::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
