#include "rehearsal/fakeapi/fake_apiserver_cli.h"

#include <algorithm>
#include <ostream>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/base/strings.h"
#include "common/fs/output_file.h"
#include "rehearsal/fakeapi/api_store.h"
#include "rehearsal/fakeapi/fake_api_server.h"

namespace handoff::fakeapi {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRefused = 2;

constexpr char kDescription[] =
    "handoff-fake-apiserver serves an in-memory Kubernetes API (Leases, Roles, RoleBindings,\n"
    "Nodes, Pods, ConfigMaps, DaemonSets) that behaves like kube-apiserver for what it models:\n"
    "resourceVersion on every write, 409 on a stale one, real Status errors, 401/403, TLS with\n"
    "client certificates (the user is the certificate's CN, its groups the O entries).\n"
    "Not modelled: watch, PATCH, subresources, Namespace objects. For rehearsals and tests only.\n";

}  // namespace

int RunFakeApiServerCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                        FileSystem& fs,
                        const std::function<void(const std::string& url)>& wait_for_stop) {
  CLI::App app(kDescription, "handoff-fake-apiserver");
  app.footer(
      "Example (the test CA in tests/testdata/kube-tls):\n"
      "  handoff-fake-apiserver --tls-cert server.crt --tls-key server.key --client-ca ca.crt \\\n"
      "      --seed tests/testdata/cluster/kubeadm.yaml --port 6443\n"
      "Exit codes: 0 stopped by SIGINT/SIGTERM; 2 bad usage, unreadable seed, port in use.");
  FakeApiServerOptions options;
  bool plain_http = false;
  std::vector<std::string> seeds;
  std::vector<std::string> tokens;
  std::string port_file;
  app.add_option("--host", options.host, "Address to listen on (default 127.0.0.1)");
  app.add_option("--port", options.port, "Port to listen on; 0 (default) picks a free one")
      ->check(CLI::Range(0, 65535));
  app.add_option("--tls-cert", options.cert_file, "Server certificate (PEM)");
  app.add_option("--tls-key", options.key_file, "Server key (PEM)");
  app.add_option("--client-ca", options.client_ca_file,
                 "CA (PEM) that client certificates must chain to; without it, only tokens and "
                 "anonymous requests");
  app.add_flag("--plain-http", plain_http, "Serve plain HTTP instead of TLS");
  app.add_option("--seed", seeds,
                 "File of objects to start with (YAML documents, a List, or JSON); repeatable");
  app.add_option("--token", tokens, "Bearer token and its user: TOKEN=USER[,GROUP...]; repeatable");
  app.add_option("--port-file", port_file, "Write the port here once listening");

  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitRefused;
  }
  auto refuse = [&err](std::string_view message) {
    err << "handoff-fake-apiserver: " << message << "\n";
    return kExitRefused;
  };
  if (plain_http) {
    if (!options.cert_file.empty() || !options.key_file.empty()) {
      return refuse("--plain-http and --tls-cert/--tls-key exclude each other");
    }
  } else if (options.cert_file.empty() || options.key_file.empty()) {
    return refuse("give --tls-cert and --tls-key (or --plain-http)");
  }
  for (const std::string& token : tokens) {
    const size_t equals = token.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == token.size()) {
      return refuse(StrCat("--token ", token, ": expected TOKEN=USER[,GROUP...]"));
    }
    std::vector<std::string> parts =
        ToStrings(StrSplit(std::string_view(token).substr(equals + 1), ","));
    UserInfo user{parts.front(), std::vector<std::string>(parts.begin() + 1, parts.end())};
    options.tokens[token.substr(0, equals)] = user;
  }

  ApiStore store;
  for (const std::string& seed : seeds) {
    absl::StatusOr<std::string> text = fs.ReadFile(seed);
    if (!text.ok()) return refuse(StrCat("--seed ", seed, ": ", text.status().message()));
    if (absl::Status seeded = store.Seed(*text, seed); !seeded.ok()) {
      return refuse(StrCat(seeded.message()));
    }
  }
  absl::StatusOr<std::unique_ptr<FakeApiServer>> server = FakeApiServer::Start(store, options);
  if (!server.ok()) return refuse(StrCat(server.status().message()));
  const std::string url = (*server)->url();
  if (!port_file.empty()) {
    if (absl::Status written =
            WriteOutputFile(fs, port_file, StrCat((*server)->port(), "\n"), 0644);
        !written.ok()) {
      return refuse(StrCat("--port-file: ", written.message()));
    }
  }
  size_t objects = 0;
  for (const kube::ResourceType* type : kube::KnownResourceTypes()) {
    objects += store.List(*type).size();
  }
  out << "serving " << url << " (" << objects << " objects)" << std::endl;
  wait_for_stop(url);
  (*server)->Stop();
  return kExitOk;
}

}  // namespace handoff::fakeapi
