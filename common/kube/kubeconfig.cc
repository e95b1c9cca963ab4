#include "common/kube/kubeconfig.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <optional>

#include "absl/strings/escaping.h"
#include "common/base/strings.h"
#include "common/base/yaml_util.h"

namespace handoff::kube {
namespace {

// A kubeconfig field path for messages: clusters["kubernetes"].cluster.server.
std::string FieldPath(std::string_view list, std::string_view name, std::string_view inner,
                      std::string_view key) {
  return StrCat(list, "[\"", name, "\"].", inner, key.empty() ? "" : ".", key);
}

class Parser {
 public:
  Parser(const std::string& path, const KubeconfigFileReader& read_file)
      : path_(path), read_file_(read_file) {}

  absl::Status Error(std::string_view field, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(path_, ": ", field, ": ", what));
  }

  // A string field of a map: nullopt when absent (or null), an error when not a string. As
  // client-go decodes the file (YAML 1.1 to JSON, then into its types), a plain 5 or yes is a
  // number or a boolean there, which a string field refuses.
  absl::StatusOr<std::optional<std::string>> Scalar(const YAML::Node& map, const char* key,
                                                    std::string_view field) const {
    if (!map.IsMap()) return std::optional<std::string>();
    const YAML::Node value = map[key];
    if (!value.IsDefined() || value.IsNull()) return std::optional<std::string>();
    const JsonScalarType type = JsonTypeOf(value);
    if (value.IsScalar() && type == JsonScalarType::kNull) return std::optional<std::string>();
    if (!value.IsScalar() || type != JsonScalarType::kString) {
      return Error(field, StrCat("must be a string, found ", DescribeYamlNode(value),
                                 value.IsScalar() ? StrCat("; quote it: \"", value.Scalar(), "\"")
                                                  : std::string()));
    }
    return std::optional<std::string>(value.Scalar());
  }

  // A boolean field of a map: nullopt when absent (or null), an error when not a boolean.
  absl::StatusOr<std::optional<bool>> Bool(const YAML::Node& map, const char* key,
                                           std::string_view field) const {
    if (!map.IsMap()) return std::optional<bool>();
    const YAML::Node value = map[key];
    if (!value.IsDefined() || value.IsNull()) return std::optional<bool>();
    const JsonScalarType type = JsonTypeOf(value);
    if (value.IsScalar() && type == JsonScalarType::kNull) return std::optional<bool>();
    if (!value.IsScalar() || type != JsonScalarType::kBool) {
      return Error(field, StrCat("must be true or false, found ", DescribeYamlNode(value)));
    }
    return std::optional<bool>(IsYamlTrue(value));
  }

  // The `inner` map of the entry of list `list` whose name is `name`.
  absl::StatusOr<YAML::Node> Named(const YAML::Node& root, const char* list,
                                   const std::string& name, const char* inner) const {
    std::vector<std::string> names;
    if (HasField(root, list, YAML::NodeType::Sequence)) {
      for (const YAML::Node& entry : root[list]) {
        if (!HasField(entry, "name", YAML::NodeType::Scalar)) continue;
        const std::string entry_name = entry["name"].Scalar();
        names.push_back(entry_name);
        if (entry_name != name) continue;
        if (!HasField(entry, inner, YAML::NodeType::Map)) {
          return Error(FieldPath(list, name, inner, ""), "missing or not a map");
        }
        return entry[inner];
      }
    } else if (root.IsMap() && root[list].IsDefined() && !root[list].IsNull()) {
      return Error(list, "must be a list");
    }
    return absl::NotFoundError(StrCat(path_, ": ", list, ": no entry named \"", name, "\"",
                                      names.empty()
                                          ? std::string(" (the list is empty)")
                                          : StrCat(" (entries: ", StrJoin(names, ", "), ")")));
  }

  std::string Resolve(const std::string& file) const {
    if (StartsWith(file, "/")) return file;
    const size_t slash = path_.rfind('/');
    return slash == std::string::npos ? file : StrCat(path_.substr(0, slash + 1), file);
  }

  // The content of `<key>-data` (base64) or of the file `<key>` names; "" when neither is set.
  absl::StatusOr<std::string> DataOrFile(const YAML::Node& map, const std::string& key,
                                         const std::string& data_key,
                                         std::string_view field_prefix) const {
    absl::StatusOr<std::optional<std::string>> data =
        Scalar(map, data_key.c_str(), StrCat(field_prefix, data_key));
    if (!data.ok()) return data.status();
    absl::StatusOr<std::optional<std::string>> file =
        Scalar(map, key.c_str(), StrCat(field_prefix, key));
    if (!file.ok()) return file.status();
    if (data->has_value() && !(*data)->empty()) {
      std::string compact;
      for (char c : **data) {
        if (c != '\n' && c != '\r' && c != ' ' && c != '\t') compact.push_back(c);
      }
      std::string decoded;
      if (!absl::Base64Unescape(compact, &decoded)) {
        return Error(StrCat(field_prefix, data_key),
                     "not valid base64; paste the output of `base64 -w0 FILE`");
      }
      return decoded;
    }
    if (file->has_value() && !(*file)->empty()) {
      const std::string resolved = Resolve(**file);
      absl::StatusOr<std::string> content = read_file_(resolved);
      if (!content.ok()) {
        return Error(StrCat(field_prefix, key),
                     StrCat("cannot read ", resolved, ": ", content.status().message()));
      }
      return *content;
    }
    return std::string();
  }

 private:
  const std::string& path_;
  const KubeconfigFileReader& read_file_;
};

}  // namespace

absl::StatusOr<ClusterCredentials> ParseKubeconfig(std::string_view text, const std::string& path,
                                                   const std::string& context,
                                                   const KubeconfigFileReader& read_file) {
  // client-go reads kubeconfigs with aliases, and a hand-written one may share an entry that way;
  // they are accepted here with their expansion bounded (YamlLimits), as nothing else needs.
  YamlLimits limits;
  limits.allow_aliases = true;
  absl::StatusOr<YAML::Node> loaded = LoadYaml(text, path, limits);
  if (!loaded.ok()) return loaded.status();
  const YAML::Node& root = *loaded;
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        StrCat(path, ": not a kubeconfig (expected a map with clusters, users and contexts)"));
  }
  Parser parser(path, read_file);
  ClusterCredentials credentials;
  credentials.kubeconfig = path;

  absl::StatusOr<std::optional<std::string>> current =
      parser.Scalar(root, "current-context", "current-context");
  if (!current.ok()) return current.status();
  credentials.context = context.empty() ? current->value_or("") : context;
  if (credentials.context.empty()) {
    return parser.Error("current-context",
                        "not set; pass --context NAME or run `kubectl config use-context NAME`");
  }
  absl::StatusOr<YAML::Node> context_map =
      parser.Named(root, "contexts", credentials.context, "context");
  if (!context_map.ok()) {
    if (context_map.status().code() != absl::StatusCode::kNotFound) return context_map.status();
    return absl::NotFoundError(StrCat(context_map.status().message(), "; the context \"",
                                      credentials.context, "\" comes from ",
                                      context.empty() ? "current-context" : "--context"));
  }
  const std::string context_prefix = FieldPath("contexts", credentials.context, "context", "");
  absl::StatusOr<std::optional<std::string>> cluster_name =
      parser.Scalar(*context_map, "cluster", StrCat(context_prefix, ".cluster"));
  if (!cluster_name.ok()) return cluster_name.status();
  absl::StatusOr<std::optional<std::string>> user_name =
      parser.Scalar(*context_map, "user", StrCat(context_prefix, ".user"));
  if (!user_name.ok()) return user_name.status();
  absl::StatusOr<std::optional<std::string>> ns =
      parser.Scalar(*context_map, "namespace", StrCat(context_prefix, ".namespace"));
  if (!ns.ok()) return ns.status();
  if (!cluster_name->has_value() || (*cluster_name)->empty()) {
    return parser.Error(StrCat(context_prefix, ".cluster"), "missing; name an entry of clusters");
  }
  credentials.cluster_name = **cluster_name;
  credentials.user_name = user_name->value_or("");
  credentials.namespace_name = ns->value_or("");

  // The cluster: where it is and how to trust it.
  absl::StatusOr<YAML::Node> cluster =
      parser.Named(root, "clusters", credentials.cluster_name, "cluster");
  if (!cluster.ok()) return cluster.status();
  const std::string cluster_prefix = FieldPath("clusters", credentials.cluster_name, "cluster", "");
  absl::StatusOr<std::optional<std::string>> server =
      parser.Scalar(*cluster, "server", StrCat(cluster_prefix, ".server"));
  if (!server.ok()) return server.status();
  if (!server->has_value() || (*server)->empty()) {
    return parser.Error(StrCat(cluster_prefix, ".server"),
                        "missing; set the API server's URL, e.g. https://10.0.0.10:6443");
  }
  credentials.server = **server;
  while (EndsWith(credentials.server, "/")) credentials.server.pop_back();
  if (!StartsWith(credentials.server, "https://") && !StartsWith(credentials.server, "http://")) {
    return parser.Error(StrCat(cluster_prefix, ".server"),
                        StrCat("\"", credentials.server,
                               "\" is not an http(s) URL; write it as https://HOST:PORT"));
  }
  for (const char* unsupported : {"proxy-url", "tls-server-name"}) {
    absl::StatusOr<std::optional<std::string>> value =
        parser.Scalar(*cluster, unsupported, StrCat(cluster_prefix, ".", unsupported));
    if (!value.ok()) return value.status();
    if (value->has_value() && !(*value)->empty()) {
      return parser.Error(StrCat(cluster_prefix, ".", unsupported),
                          "not supported by handoff; connect to the API server directly with a "
                          "server URL its certificate names");
    }
  }
  absl::StatusOr<std::string> ca = parser.DataOrFile(
      *cluster, "certificate-authority", "certificate-authority-data", StrCat(cluster_prefix, "."));
  if (!ca.ok()) return ca.status();
  credentials.ca_pem = *ca;
  absl::StatusOr<std::optional<bool>> insecure = parser.Bool(
      *cluster, "insecure-skip-tls-verify", StrCat(cluster_prefix, ".insecure-skip-tls-verify"));
  if (!insecure.ok()) return insecure.status();
  if (insecure->value_or(false)) {
    if (!credentials.ca_pem.empty()) {
      // kubectl refuses this combination too: it is never what was meant.
      return parser.Error(StrCat(cluster_prefix, ".insecure-skip-tls-verify"),
                          "set together with a certificate authority; remove one of them");
    }
    credentials.insecure_skip_tls_verify = true;
    credentials.warnings.push_back(
        StrCat(path, ": ", cluster_prefix,
               ".insecure-skip-tls-verify is true: the API server's certificate is NOT verified, "
               "so anyone on the network path to ",
               credentials.server,
               " can impersonate it and read the credentials sent; set "
               "certificate-authority-data instead"));
  }
  if (StartsWith(credentials.server, "http://")) {
    credentials.warnings.push_back(StrCat(path, ": ", cluster_prefix, ".server ",
                                          credentials.server,
                                          " is plain HTTP: nothing is encrypted or verified"));
  }

  // The user: how to authenticate.
  if (!credentials.user_name.empty()) {
    absl::StatusOr<YAML::Node> user = parser.Named(root, "users", credentials.user_name, "user");
    if (!user.ok()) return user.status();
    const std::string user_prefix = FieldPath("users", credentials.user_name, "user", "");
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (user->IsMap() && (*user)[unsupported].IsDefined() && !(*user)[unsupported].IsNull()) {
        return parser.Error(
            StrCat(user_prefix, ".", unsupported),
            "not supported by handoff; use a client certificate or a token (on a control-plane "
            "node, /etc/kubernetes/admin.conf has a client certificate)");
      }
    }
    absl::StatusOr<std::string> cert = parser.DataOrFile(
        *user, "client-certificate", "client-certificate-data", StrCat(user_prefix, "."));
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key =
        parser.DataOrFile(*user, "client-key", "client-key-data", StrCat(user_prefix, "."));
    if (!key.ok()) return key.status();
    if (cert->empty() != key->empty()) {
      return parser.Error(user_prefix, cert->empty()
                                           ? "has a client key but no client certificate; set "
                                             "client-certificate or client-certificate-data"
                                           : "has a client certificate but no client key; set "
                                             "client-key or client-key-data");
    }
    credentials.client_cert_pem = *cert;
    credentials.client_key_pem = *key;
    absl::StatusOr<std::optional<std::string>> token =
        parser.Scalar(*user, "token", StrCat(user_prefix, ".token"));
    if (!token.ok()) return token.status();
    credentials.bearer_token = token->value_or("");
    if (absl::Status usable = CheckHeaderValue(credentials.bearer_token); !usable.ok()) {
      return parser.Error(StrCat(user_prefix, ".token"), std::string(usable.message()));
    }
    if (credentials.bearer_token.empty()) {
      absl::StatusOr<std::optional<std::string>> token_file =
          parser.Scalar(*user, "tokenFile", StrCat(user_prefix, ".tokenFile"));
      if (!token_file.ok()) return token_file.status();
      if (token_file->has_value() && !(*token_file)->empty()) {
        const std::string resolved = parser.Resolve(**token_file);
        absl::StatusOr<std::string> content = read_file(resolved);
        if (!content.ok()) {
          return parser.Error(StrCat(user_prefix, ".tokenFile"),
                              StrCat("cannot read ", resolved, ": ", content.status().message()));
        }
        credentials.bearer_token = std::string(StripWhitespace(*content));
        if (absl::Status usable = CheckHeaderValue(credentials.bearer_token); !usable.ok()) {
          return parser.Error(StrCat(user_prefix, ".tokenFile"),
                              StrCat(resolved, ": ", usable.message()));
        }
      }
    }
  }
  credentials.identity = credentials.user_name;
  if (!credentials.client_cert_pem.empty()) {
    absl::StatusOr<CertificateSubject> subject =
        ParseCertificateSubject(credentials.client_cert_pem);
    if (!subject.ok()) {
      return parser.Error(FieldPath("users", credentials.user_name, "user", "client-certificate"),
                          StrCat(subject.status().message()));
    }
    if (!subject->common_name.empty()) credentials.identity = subject->common_name;
  }
  if (credentials.identity.empty()) credentials.identity = "(anonymous)";
  return credentials;
}

absl::Status CheckHeaderValue(std::string_view value) {
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      const char* name = c == '\r'   ? "a carriage return (CR)"
                         : c == '\n' ? "a line feed (LF)"
                                     : "a control character";
      return absl::InvalidArgumentError(
          StrCat("contains ", name, " at byte ", i + 1,
                 ", which would end the HTTP header it is sent in; client-go refuses it too"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterCredentials> LoadKubeconfig(const FileSystem& fs, const std::string& path,
                                                  const std::string& context) {
  absl::StatusOr<std::string> text = fs.ReadFile(path, kKubeconfigRead);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        StrCat("cannot read the kubeconfig ", path, ": ", text.status().message(),
                               "; pass --kubeconfig FILE (on a control-plane node: "
                               "/etc/kubernetes/admin.conf)"));
  }
  return ParseKubeconfig(*text, path, context,
                         [&fs](const std::string& file) { return fs.ReadFile(file, kPemRead); });
}

absl::StatusOr<CertificateSubject> ParseCertificateSubject(std::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  if (bio == nullptr) return absl::InternalError("cannot allocate an OpenSSL BIO");
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (cert == nullptr) {
    return absl::InvalidArgumentError("not a PEM certificate (-----BEGIN CERTIFICATE-----)");
  }
  return SubjectOfCertificate(cert.get());
}

CertificateSubject SubjectOfCertificate(const X509* certificate) {
  CertificateSubject subject;
  const X509_NAME* name = X509_get_subject_name(certificate);
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(entry);
    std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                      static_cast<size_t>(ASN1_STRING_length(data)));
    if (nid == NID_commonName) subject.common_name = value;
    if (nid == NID_organizationName) subject.organizations.push_back(value);
  }
  return subject;
}

}  // namespace handoff::kube
