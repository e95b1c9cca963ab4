// handoffctl certs init|issue: the handoff CA and the certificates of the coordinator, the node
// agents and the operators (common/pki/pki.h), written through the environment's file system.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/base/strings.h"
#include "common/fs/atomic_file.h"
#include "common/fs/host_path.h"
#include "common/fs/read_limit.h"
#include "common/pki/pki.h"
#include "ctl/command_context.h"

namespace handoff::ctl {
namespace {

constexpr char kCaName[] = "handoff-ca";
constexpr char kCaCertificateFile[] = "ca.crt";
constexpr char kCaKeyFile[] = "ca.key";
// The groups and name the coordinator authorises on (README "Security").
constexpr char kAgentsGroup[] = "handoff:agents";
constexpr char kOperatorsGroup[] = "handoff:operators";
constexpr char kCoordinatorName[] = "handoff-coordinator";
constexpr unsigned kDirectoryMode = 0700;
constexpr unsigned kKeyMode = 0600;
constexpr unsigned kCertificateMode = 0644;

struct InitFlags {
  std::string dir;
  std::string validity = "8760h";
};

struct IssueFlags {
  std::string dir;
  std::string node;
  std::string operator_name;
  bool coordinator = false;
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;
  std::string out;
  std::string validity = "8760h";
  bool force = false;
};

std::string Join(const std::string& dir, std::string_view name) {
  return dir == "/" ? StrCat("/", name) : StrCat(dir, "/", name);
}

std::string Mode(unsigned mode) {
  char text[16];
  std::snprintf(text, sizeof(text), "%04o", mode & 07777);
  return text;
}

std::string Timestamp(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone());
}

// The file system takes absolute paths, and handoffctl has no notion of a working directory to
// resolve others against.
absl::StatusOr<std::string> DirectoryOf(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("--dir is empty; name the CA's directory");
  if (!StartsWith(dir, "/")) {
    return absl::InvalidArgumentError(StrCat("--dir ", dir,
                                             " is not an absolute path; write it in full, e.g. "
                                             "--dir /etc/handoff/pki or --dir \"$PWD/",
                                             dir, "\""));
  }
  return TrimTrailingSlashes(dir);
}

absl::StatusOr<absl::Duration> ValidityOf(const std::string& text) {
  absl::Duration validity;
  if (!absl::ParseDuration(text, &validity) || validity <= absl::ZeroDuration() ||
      validity == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(StrCat(
        "--validity \"", text, "\" is not a positive duration such as 8760h (a year) or 720h"));
  }
  return validity;
}

// Whether something is at `path`; an error when that cannot be told.
absl::StatusOr<bool> Present(const FileSystem& files, const std::string& path) {
  absl::StatusOr<FileInfo> info = files.Stat(path);
  if (info.ok()) return true;
  if (absl::IsNotFound(info.status())) return false;
  return absl::Status(info.status().code(),
                      StrCat("cannot tell whether ", path, " exists: ", info.status().message()));
}

// Key material goes only into a directory no one but its owner (or root) can change: whoever can
// write a directory can rename ca.crt or a key in it, or plant a link where one is about to be
// written. Such a directory is refused, not tightened: it may be shared (/tmp) and its mode is
// its owner's to change. `what` says which directory ("the CA's directory").
absl::Status CheckPrivateDirectory(const FileSystem& files, const std::string& dir,
                                   std::string_view what) {
  absl::StatusOr<FileInfo> info = files.Stat(dir);
  if (absl::IsNotFound(info.status())) return absl::OkStatus();  // created 0700
  if (!info.ok()) {
    return absl::Status(info.status().code(),
                        StrCat("cannot check ", what, " ", dir, ": ", info.status().message()));
  }
  const unsigned euid = ::geteuid();
  std::string problem;
  if ((info->mode & 022) != 0) {
    problem = StrCat("is writable by ", (info->mode & 002) != 0 ? "everyone" : "its group", " (",
                     Mode(info->mode), ")");
  } else if (info->uid != euid && info->uid != 0) {
    problem = StrCat("belongs to uid ", info->uid, ", who can make it writable to anyone");
  }
  if (problem.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(StrCat(
      what, " ", dir, " ", problem,
      ": whoever can change it can replace the CA's files or the keys in it, or plant a link "
      "where one is written; nothing was written. Use a directory only you can write (chmod "
      "go-w ",
      dir, ", or a new one: certs init creates it 0700)"));
}

// Each file is replaced atomically, and the key is never readable by others, not even as the temp
// file (it is created with its final mode). The key goes first: a crash in between then leaves a
// new pair as a key without a certificate, which nothing loads. A replaced pair (--force) can be
// left mismatched either way; gRPC then refuses to load it, and running the command again with
// --force repairs it.
absl::Status WritePair(FileSystem& files, const std::string& certificate_path,
                       const std::string& key_path, const pki::KeyPair& pair) {
  if (absl::Status written =
          AtomicReplace(files, key_path, pair.private_key_pem, FileInfo{false, kKeyMode, 0, 0});
      !written.ok()) {
    return written;
  }
  return AtomicReplace(files, certificate_path, pair.certificate_pem,
                       FileInfo{false, kCertificateMode, 0, 0});
}

// "valid until T", and why when the CA's expiry cut it short.
std::string ValidUntil(const pki::CertificateInfo& info, absl::Time now, absl::Duration validity) {
  std::string text = StrCat("valid until ", Timestamp(info.not_after));
  if (info.not_after < now + validity - absl::Seconds(1)) {
    StrAppend(&text, " (the CA's own expiry: a certificate cannot outlive its CA)");
  }
  return text;
}

int Init(CommandContext& context, const InitFlags& flags) {
  absl::StatusOr<std::string> dir = DirectoryOf(flags.dir);
  if (!dir.ok()) return context.Fail(dir.status());
  absl::StatusOr<absl::Duration> validity = ValidityOf(flags.validity);
  if (!validity.ok()) return context.Fail(validity.status());
  std::unique_ptr<FileSystem> files = context.environment().open_files();
  const std::string key_path = Join(*dir, kCaKeyFile);
  const std::string certificate_path = Join(*dir, kCaCertificateFile);

  // A CA is never replaced: certificates it signed may be installed anywhere, and a new ca.crt
  // would silently cut them all off.
  absl::StatusOr<bool> key_present = Present(*files, key_path);
  if (!key_present.ok()) return context.Fail(key_present.status());
  if (*key_present) {
    return context.Fail(absl::AlreadyExistsError(
        StrCat(key_path, " already exists: ", *dir,
               " holds a CA; nothing was written. Issue certificates with it (`handoffctl certs "
               "issue --dir ",
               *dir, " ...`), or choose another --dir for a new CA")));
  }
  absl::StatusOr<bool> certificate_present = Present(*files, certificate_path);
  if (!certificate_present.ok()) return context.Fail(certificate_present.status());
  if (*certificate_present) {
    return context.Fail(absl::AlreadyExistsError(
        StrCat(certificate_path, " already exists (without ", kCaKeyFile,
               "); nothing was written. Remove it to create a new CA there, or choose another "
               "--dir")));
  }

  if (absl::Status private_dir = CheckPrivateDirectory(*files, *dir, "the CA's directory");
      !private_dir.ok()) {
    return context.Fail(private_dir);
  }

  const absl::Time now = context.clock().Now();
  absl::StatusOr<pki::KeyPair> ca = pki::CreateCertificateAuthority(kCaName, now, *validity);
  if (!ca.ok()) return context.Fail(ca.status());
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(ca->certificate_pem);
  if (!info.ok()) return context.Fail(info.status());
  if (absl::Status created = EnsureDirectory(*files, *dir, kDirectoryMode); !created.ok()) {
    return context.Fail(created);
  }
  if (absl::Status written = WritePair(*files, certificate_path, key_path, *ca); !written.ok()) {
    return context.Fail(written);
  }
  context.out() << "certs: created the handoff CA (CN=" << kCaName << "), "
                << ValidUntil(*info, now, *validity) << "\n"
                << "  " << certificate_path << " (" << Mode(kCertificateMode)
                << "): every agent, the coordinator and every operator trust it (--ca)\n"
                << "  " << key_path << " (" << Mode(kKeyMode)
                << "): keep it here, off the nodes; whoever holds it can mint any identity\n"
                << "next: handoffctl certs issue --dir " << *dir
                << " --coordinator --dns NAME --ip ADDR, then --node NAME for each "
                   "control-plane node and --operator NAME for each operator\n";
  return kExitOk;
}

// What `certs issue` makes: the request, the file name it defaults to, and how to describe it.
struct Identity {
  pki::CertificateRequest request;
  std::string default_name;  // <name>.crt / <name>.key
  std::string summary;       // "the agent certificate of node cp-1"
  std::string usage;         // where the files go and what they allow
};

absl::StatusOr<Identity> IdentityOf(const IssueFlags& flags, absl::Duration validity) {
  const int chosen =
      (flags.node.empty() ? 0 : 1) + (flags.operator_name.empty() ? 0 : 1) + flags.coordinator;
  if (chosen != 1) {
    return absl::InvalidArgumentError(
        StrCat(chosen == 0 ? "say whose certificate to issue" : "issue one certificate at a time",
               ": give exactly one of --node NAME, --operator NAME, --coordinator"));
  }
  const bool names_given = !flags.dns_names.empty() || !flags.ip_addresses.empty();
  if (names_given && !flags.coordinator) {
    return absl::InvalidArgumentError(
        "--dns and --ip name the addresses the coordinator is dialed at; they go with "
        "--coordinator only");
  }
  Identity identity;
  identity.request.validity = validity;
  if (!flags.node.empty()) {
    identity.request.common_name = flags.node;
    identity.request.organizations = {kAgentsGroup};
    identity.request.client = true;
    identity.default_name = flags.node;
    identity.summary = StrCat("the agent certificate of node ", flags.node, " (O=", kAgentsGroup,
                              ", CN=", flags.node, ", clientAuth)");
    identity.usage = StrCat("on ", flags.node,
                            ", install them with ca.crt as /etc/handoff/pki/agent.crt, agent.key "
                            "and ca.crt (handoff-agent's defaults); the agent may register only "
                            "as node ",
                            flags.node);
  } else if (!flags.operator_name.empty()) {
    identity.request.common_name = flags.operator_name;
    identity.request.organizations = {kOperatorsGroup};
    identity.request.client = true;
    identity.default_name = flags.operator_name;
    identity.summary =
        StrCat("the operator certificate of ", flags.operator_name, " (O=", kOperatorsGroup,
               ", CN=", flags.operator_name, ", clientAuth)");
    identity.usage = StrCat(
        "give them to ", flags.operator_name,
        " with ca.crt: handoffctl reads $HANDOFF_CERT, $HANDOFF_KEY and $HANDOFF_CA, else "
        "/etc/handoff/pki/operator.crt, operator.key and ca.crt; they drive the coordinator, and "
        "every change is recorded as made by ",
        flags.operator_name);
  } else {
    if (!names_given) {
      return absl::InvalidArgumentError(
          "--coordinator needs the names agents and operators dial it by: --dns NAME and/or "
          "--ip ADDR (each may be repeated)");
    }
    identity.request.common_name = kCoordinatorName;
    identity.request.dns_names = flags.dns_names;
    identity.request.ip_addresses = flags.ip_addresses;
    identity.request.server = true;
    identity.default_name = "coordinator";
    std::vector<std::string> names = flags.dns_names;
    names.insert(names.end(), flags.ip_addresses.begin(), flags.ip_addresses.end());
    identity.summary = StrCat("the coordinator's certificate (CN=", kCoordinatorName,
                              ", serverAuth) for ", StrJoin(names, ", "));
    identity.usage =
        "install them with ca.crt as /etc/handoff/pki/coordinator.crt, coordinator.key and "
        "ca.crt (handoff-coordinator's defaults); agents and operators must dial one of those "
        "names, or pass --server-name with one";
  }
  return identity;
}

// PREFIX.crt and PREFIX.key: --out inside --dir unless absolute, else the identity's name there.
absl::StatusOr<std::string> PrefixOf(const IssueFlags& flags, const std::string& dir,
                                     const Identity& identity) {
  if (!flags.out.empty()) {
    if (EndsWith(flags.out, "/")) {
      return absl::InvalidArgumentError(
          StrCat("--out ", flags.out, " names a directory; give a file name prefix, e.g. ",
                 Join(TrimTrailingSlashes(flags.out), identity.default_name)));
    }
    return StartsWith(flags.out, "/") ? flags.out : Join(dir, flags.out);
  }
  const std::string& name = identity.default_name;
  if (StrContains(name, "/") || name == "." || name == ".." || name.empty()) {
    return absl::InvalidArgumentError(
        StrCat("\"", name, "\" cannot be a file name; choose the files' names with --out PREFIX"));
  }
  return Join(dir, name);
}

absl::StatusOr<std::string> ReadCaFile(const FileSystem& files, const std::string& dir,
                                       const char* file) {
  const std::string path = Join(dir, file);
  absl::StatusOr<std::string> read = files.ReadFile(path, kPemRead);
  if (absl::IsNotFound(read.status())) {
    return absl::FailedPreconditionError(StrCat(
        path, " does not exist: there is no CA in ", dir, "; run `handoffctl certs init --dir ",
        dir, "` first, or point --dir at the directory holding ca.crt and ca.key"));
  }
  if (!read.ok()) {
    return absl::Status(read.status().code(),
                        StrCat("cannot read the CA's ", file, ": ", read.status().message()));
  }
  return read;
}

// The CA key signs every identity: one that others could read may already be copied, so it is
// not used (as ssh refuses an unprotected private key) until its owner has looked.
absl::Status CheckCaKeyMode(const FileSystem& files, const std::string& dir) {
  const std::string path = Join(dir, kCaKeyFile);
  absl::StatusOr<FileInfo> info = files.Stat(path);
  if (!info.ok()) {
    return absl::Status(info.status().code(),
                        StrCat("cannot check ", path, ": ", info.status().message()));
  }
  if ((info->mode & 077) == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      StrCat(path, " is open to ", (info->mode & 007) != 0 ? "everyone" : "its group", " (",
             Mode(info->mode),
             "), and whoever has read it can mint any identity: nothing was issued. If no one else "
             "can have read it, chmod 0600 ",
             path,
             "; otherwise create a new CA (certs init in another --dir) and issue every "
             "certificate again"));
}

int Issue(CommandContext& context, const IssueFlags& flags) {
  absl::StatusOr<std::string> dir = DirectoryOf(flags.dir);
  if (!dir.ok()) return context.Fail(dir.status());
  absl::StatusOr<absl::Duration> validity = ValidityOf(flags.validity);
  if (!validity.ok()) return context.Fail(validity.status());
  absl::StatusOr<Identity> identity = IdentityOf(flags, *validity);
  if (!identity.ok()) return context.Fail(identity.status());
  absl::StatusOr<std::string> prefix = PrefixOf(flags, *dir, *identity);
  if (!prefix.ok()) return context.Fail(prefix.status());
  const std::string certificate_path = StrCat(*prefix, ".crt");
  const std::string key_path = StrCat(*prefix, ".key");
  for (const char* ca_file : {kCaCertificateFile, kCaKeyFile}) {
    const std::string ca_path = Join(*dir, ca_file);
    if (certificate_path == ca_path || key_path == ca_path) {
      return context.Fail(absl::InvalidArgumentError(
          StrCat("the certificate would be written over the CA's own ", ca_path,
                 "; choose other file names with --out PREFIX")));
    }
  }

  std::unique_ptr<FileSystem> files = context.environment().open_files();
  absl::StatusOr<std::string> ca_key = ReadCaFile(*files, *dir, kCaKeyFile);
  if (!ca_key.ok()) return context.Fail(ca_key.status());
  if (absl::Status protected_key = CheckCaKeyMode(*files, *dir); !protected_key.ok()) {
    return context.Fail(protected_key);
  }
  for (const auto& [path, what] : {std::pair{*dir, "the CA's directory"},
                                   std::pair{ParentPath(key_path), "the key's directory"}}) {
    if (absl::Status private_dir = CheckPrivateDirectory(*files, path, what); !private_dir.ok()) {
      return context.Fail(private_dir);
    }
  }
  absl::StatusOr<std::string> ca_certificate = ReadCaFile(*files, *dir, kCaCertificateFile);
  if (!ca_certificate.ok()) return context.Fail(ca_certificate.status());
  const pki::KeyPair ca{*std::move(ca_certificate), *std::move(ca_key)};
  if (!flags.force) {
    for (const std::string& path : {certificate_path, key_path}) {
      absl::StatusOr<bool> present = Present(*files, path);
      if (!present.ok()) return context.Fail(present.status());
      if (*present) {
        return context.Fail(absl::AlreadyExistsError(
            StrCat(path, " already exists; nothing was written. Pass --force to replace ",
                   certificate_path, " and ", key_path, ", or choose other names with --out")));
      }
    }
  }

  const absl::Time now = context.clock().Now();
  absl::StatusOr<pki::KeyPair> issued = pki::IssueCertificate(ca, identity->request, now);
  if (!issued.ok()) {
    return context.Fail(absl::Status(
        issued.status().code(), StrCat("cannot issue ", identity->summary, " with the CA in ", *dir,
                                       ": ", issued.status().message())));
  }
  // Checked before anything is written, so that a certificate that would be refused never
  // replaces a working one.
  if (absl::Status verified =
          pki::VerifyCertificate(ca.certificate_pem, issued->certificate_pem, now);
      !verified.ok()) {
    return context.Fail(verified);
  }
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(issued->certificate_pem);
  if (!info.ok()) return context.Fail(info.status());
  if (absl::Status created = EnsureDirectory(*files, ParentPath(key_path), kDirectoryMode);
      !created.ok()) {
    return context.Fail(created);
  }
  if (absl::Status written = WritePair(*files, certificate_path, key_path, *issued);
      !written.ok()) {
    return context.Fail(written);
  }
  context.out() << "certs: issued " << identity->summary << ", serial " << info->serial_hex << ", "
                << ValidUntil(*info, now, *validity) << "\n"
                << "  " << certificate_path << " (" << Mode(kCertificateMode) << ")\n"
                << "  " << key_path << " (" << Mode(kKeyMode) << ")\n"
                << identity->usage << "\n";
  return kExitOk;
}

}  // namespace

void AddCertsCommands(CLI::App& app, CommandContext& context) {
  CLI::App* certs = app.add_subcommand(
      "certs",
      "The handoff CA and the certificates of handoff's mutual TLS. Every party trusts only this "
      "CA. The coordinator's certificate (CN=handoff-coordinator) names the addresses it is "
      "dialed at. An agent certificate (O=handoff:agents, CN=<node>) lets a handoff-agent "
      "register only as that node. An operator certificate (O=handoff:operators, CN=<name>) "
      "lets its holder drive the coordinator with handoffctl (plan, start, pause, resume, abort, "
      "rollback, finalize), recorded as <name> in the history. Keys are written 0600, "
      "certificates 0644, each file replaced atomically");
  certs->require_subcommand(1);

  auto init_flags = std::make_shared<InitFlags>();
  CLI::App* init = certs->add_subcommand(
      "init",
      "Create a new CA (CN=handoff-ca, EC P-256) in DIR, made 0700 when missing: ca.crt, for "
      "every party, and ca.key, which signs every identity and stays here. Refuses, writing "
      "nothing, when DIR already holds ca.key or ca.crt, or when others can write DIR");
  init->add_option("--dir", init_flags->dir,
                   "The CA's directory, an absolute path, e.g. /etc/handoff/pki")
      ->type_name("DIR")
      ->required();
  init->add_option("--validity", init_flags->validity,
                   "How long the CA is valid, e.g. 8760h (default, a year) or 17520h; no "
                   "certificate it signs outlives it")
      ->type_name("DURATION");
  init->callback([&context, init_flags] { context.exit_code = Init(context, *init_flags); });

  auto issue_flags = std::make_shared<IssueFlags>();
  CLI::App* issue = certs->add_subcommand(
      "issue",
      "Sign a new key and certificate with the CA in DIR, for one of --node, --operator or "
      "--coordinator. Writes <name>.key (0600) and <name>.crt (0644) in DIR (coordinator.key "
      "and .crt for the coordinator), or PREFIX.key and .crt with --out; an existing file is "
      "kept unless --force. Prints what it wrote and where it goes");
  issue
      ->add_option("--dir", issue_flags->dir,
                   "The CA's directory (ca.crt, ca.key from `certs init`), an absolute path")
      ->type_name("DIR")
      ->required();
  issue
      ->add_option("--node", issue_flags->node,
                   "An agent certificate for the Kubernetes node NAME (O=handoff:agents, "
                   "CN=NAME, clientAuth): its handoff-agent may register only as NAME")
      ->type_name("NAME");
  issue
      ->add_option("--operator", issue_flags->operator_name,
                   "An operator certificate for NAME (O=handoff:operators, CN=NAME, "
                   "clientAuth): its holder may drive the coordinator, and each change is "
                   "recorded as made by NAME")
      ->type_name("NAME");
  issue->add_flag("--coordinator", issue_flags->coordinator,
                  "The coordinator's server certificate (CN=handoff-coordinator, serverAuth) "
                  "naming --dns and --ip");
  issue
      ->add_option("--dns", issue_flags->dns_names,
                   "With --coordinator: a DNS name agents and operators dial it by; repeat the "
                   "flag or separate with commas")
      ->type_name("NAME")
      ->delimiter(',');
  issue
      ->add_option("--ip", issue_flags->ip_addresses,
                   "With --coordinator: an IP address (IPv4 or IPv6) agents and operators dial "
                   "it by; repeat the flag or separate with commas")
      ->type_name("ADDR")
      ->delimiter(',');
  issue
      ->add_option("--out", issue_flags->out,
                   "Write PREFIX.crt and PREFIX.key instead, inside --dir unless PREFIX is "
                   "absolute; e.g. --out agent or --out operator for the names handoff-agent "
                   "and handoffctl read by default")
      ->type_name("PREFIX");
  issue
      ->add_option("--validity", issue_flags->validity,
                   "How long the certificate is valid, e.g. 8760h (default, a year) or 720h; "
                   "never past the CA's expiry")
      ->type_name("DURATION");
  issue->add_flag("--force", issue_flags->force,
                  "Replace existing PREFIX.crt and PREFIX.key (the CA's files never)");
  issue->callback([&context, issue_flags] { context.exit_code = Issue(context, *issue_flags); });
}

}  // namespace handoff::ctl
