#include "proto/rpc/tls_material.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/strings.h"
#include "common/fs/read_limit.h"
#include "common/pki/pki.h"

namespace handoff::rpc {
namespace {

// gRPC reads the staged copies (below) this often. They are in memory, so a read costs next to
// nothing, and a change checked here reaches new connections within this second.
constexpr unsigned kStagedRefreshSeconds = 1;

absl::Status ErrnoError(std::string_view call) {
  return absl::InternalError(StrCat("staging the TLS material for gRPC: ", call, ": ",
                                    std::strerror(errno)));
}

// A file in memory (memfd_create(2)) that gRPC opens by path, /proc/self/fd/<n>, and that is
// replaced whole: the new content goes into a new memory file, which then takes over the same
// descriptor number with dup3(2). That is atomic, so an open of the path gets either the old
// file or the new one, never a mix; and no copy of the private key is ever written to a disk or
// left behind when the process dies.
class MemoryFile {
 public:
  MemoryFile() = default;
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  // `modified` becomes the file's mtime: gRPC compares mtimes to notice a file replaced while
  // it read it.
  absl::Status Replace(std::string_view content, time_t modified) {
    const int fresh = ::memfd_create("handoff-tls", MFD_CLOEXEC);
    if (fresh < 0) return ErrnoError("memfd_create");
    for (size_t written = 0; written < content.size();) {
      const ssize_t n = ::write(fresh, content.data() + written, content.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        absl::Status error = ErrnoError("write");
        ::close(fresh);
        return error;
      }
      written += static_cast<size_t>(n);
    }
    const struct timespec times[2] = {{0, UTIME_OMIT}, {modified, 0}};
    if (::futimens(fresh, times) != 0) {
      absl::Status error = ErrnoError("futimens");
      ::close(fresh);
      return error;
    }
    if (fd_ < 0) {
      fd_ = fresh;
      return absl::OkStatus();
    }
    // O_CLOEXEC: dup3 does not carry the flag over, and the agent runs commands.
    if (::dup3(fresh, fd_, O_CLOEXEC) < 0) {
      absl::Status error = ErrnoError("dup3");
      ::close(fresh);
      return error;
    }
    ::close(fresh);
    return absl::OkStatus();
  }

  std::string path() const { return StrCat("/proc/self/fd/", fd_); }

 private:
  int fd_ = -1;
};

// The CA, the certificate and the key parse, and the key is the certificate's: what gRPC's TLS
// stack needs to serve them. Errors name each part as `*_name`.
absl::Status CheckPems(const TlsPems& pems, std::string_view ca_name, std::string_view cert_name,
                       std::string_view key_name) {
  if (absl::StatusOr<pki::CertificateInfo> ca = pki::InspectCertificate(pems.ca_pem); !ca.ok()) {
    return absl::InvalidArgumentError(StrCat(ca_name, ": ", ca.status().message()));
  }
  if (absl::StatusOr<pki::CertificateInfo> cert = pki::InspectCertificate(pems.cert_pem);
      !cert.ok()) {
    return absl::InvalidArgumentError(StrCat(cert_name, ": ", cert.status().message()));
  }
  if (absl::Status pair = pki::CheckKeyPair(pki::KeyPair{pems.cert_pem, pems.key_pem});
      !pair.ok()) {
    return absl::InvalidArgumentError(StrCat(key_name, " with ", cert_name, ": ", pair.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<TlsPems> ReadPems(const FileSystem& fs, const TlsFiles& files) {
  TlsPems pems;
  for (auto [path, content] : {std::pair{&files.ca_file, &pems.ca_pem},
                               std::pair{&files.cert_file, &pems.cert_pem},
                               std::pair{&files.key_file, &pems.key_pem}}) {
    absl::StatusOr<std::string> text = fs.ReadFile(*path, kPemRead);
    if (!text.ok()) return text.status();
    *content = *std::move(text);
  }
  return pems;
}

bool SameRead(const absl::StatusOr<TlsPems>& a, const absl::StatusOr<TlsPems>& b) {
  if (a.ok() != b.ok()) return false;
  return a.ok() ? *a == *b : a.status() == b.status();
}

// "CN=handoff-coordinator, serial 5F3A..." for messages about which certificate is served.
std::string Describe(const std::string& cert_pem) {
  absl::StatusOr<pki::CertificateInfo> info = pki::InspectCertificate(cert_pem);
  if (!info.ok()) return "unreadable";
  return StrCat("CN=", info->common_name, ", serial ", info->serial_hex);
}

}  // namespace

// gRPC's FileWatcherCertificateProvider over two memory files that hold only checked material:
// the CA, and the key followed by the certificate chain in one file that gRPC reads as both.
// One file, because gRPC reads the key and the chain one after the other: from two files it
// could take the key of one version and the certificate of the next. It retries a read during
// which a file's mtime changed, and each version here gets an mtime of its own.
class TlsMaterial::StagedProvider : public grpc::experimental::CertificateProviderInterface {
 public:
  static absl::StatusOr<std::shared_ptr<StagedProvider>> Create(const TlsPems& pems) {
    auto staged = std::make_shared<StagedProvider>();
    if (absl::Status status = staged->Stage(pems); !status.ok()) return status;
    const std::string identity = staged->identity_.path();
    staged->grpc_ = std::make_unique<grpc::experimental::FileWatcherCertificateProvider>(
        identity, identity, staged->ca_.path(), kStagedRefreshSeconds);
    return staged;
  }

  // Not thread-safe: TlsMaterial stages under its refresh mutex.
  absl::Status Stage(const TlsPems& pems) {
    // Whole seconds (gRPC's resolution), each version later than the one before.
    last_modified_ = std::max(std::time(nullptr), last_modified_ + 1);
    // The key first: its PEM block is skipped where the certificates are read, and the other
    // way round.
    std::string identity = pems.key_pem;
    if (!identity.empty() && identity.back() != '\n') identity += '\n';
    identity += pems.cert_pem;
    if (absl::Status status = identity_.Replace(identity, last_modified_); !status.ok()) {
      return status;
    }
    return ca_.Replace(pems.ca_pem, last_modified_);
  }

  grpc_tls_certificate_provider* c_provider() override { return grpc_->c_provider(); }

 private:
  MemoryFile identity_;
  MemoryFile ca_;
  time_t last_modified_ = 0;
  // Declared last, so destroyed first: its thread reads the files above until it is joined.
  std::unique_ptr<grpc::experimental::FileWatcherCertificateProvider> grpc_;
};

absl::StatusOr<std::shared_ptr<TlsMaterial>> TlsMaterial::Fixed(TlsPems pems) {
  if (absl::Status checked = CheckPems(pems, "the CA", "the certificate", "the key");
      !checked.ok()) {
    return checked;
  }
  std::shared_ptr<TlsMaterial> material(new TlsMaterial());
  material->provider_ = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
      pems.ca_pem,
      std::vector<grpc::experimental::IdentityKeyCertPair>{{pems.key_pem, pems.cert_pem}});
  material->current_ = std::move(pems);
  return material;
}

absl::StatusOr<std::shared_ptr<TlsMaterial>> TlsMaterial::Watch(const TlsFiles& files,
                                                               TlsWatchOptions options) {
  if (options.refresh_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        StrCat("the certificate refresh interval must be positive, not ",
               absl::FormatDuration(options.refresh_interval)));
  }
  if (options.file_system == nullptr) options.file_system = NewPosixFileSystem("");
  std::shared_ptr<TlsMaterial> material(new TlsMaterial());
  material->files_ = files;
  material->options_ = std::move(options);
  absl::StatusOr<TlsPems> read = ReadPems(*material->options_.file_system, files);
  if (!read.ok()) return absl::InvalidArgumentError(read.status().message());
  absl::Status checked = CheckPems(*read, files.ca_file, files.cert_file, files.key_file);
  if (checked.ok() && material->options_.check) checked = material->options_.check(*read);
  if (!checked.ok()) return checked;
  absl::StatusOr<std::shared_ptr<StagedProvider>> staged = StagedProvider::Create(*read);
  if (!staged.ok()) return staged.status();
  material->staged_ = *staged;
  material->provider_ = *std::move(staged);
  material->current_ = *read;
  material->last_read_ = *std::move(read);
  TlsMaterial* watched = material.get();
  material->watcher_ = std::thread([watched] { watched->WatchLoop(); });
  return material;
}

TlsMaterial::~TlsMaterial() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_changed_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

TlsPems TlsMaterial::Current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

absl::Status TlsMaterial::Refresh() {
  if (staged_ == nullptr) return absl::OkStatus();
  std::lock_guard<std::mutex> refresh_lock(refresh_mutex_);
  absl::StatusOr<TlsPems> read = ReadPems(*options_.file_system, files_);
  // Judged once per change: an unchanged refusal is not reported again at every interval.
  if (SameRead(read, last_read_)) return last_verdict_;
  last_read_ = read;
  absl::Status verdict =
      read.ok() ? CheckPems(*read, files_.ca_file, files_.cert_file, files_.key_file)
                : read.status();
  if (verdict.ok() && options_.check) verdict = options_.check(*read);
  const TlsPems served = Current();
  if (verdict.ok() && *read != served) {
    verdict = staged_->Stage(*read);
    if (verdict.ok()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        current_ = *read;
      }
      if (options_.on_reloaded) options_.on_reloaded(*read);
    }
  }
  if (!verdict.ok()) {
    verdict = absl::Status(
        verdict.code(),
        StrCat("the TLS files changed but cannot be used: ", verdict.message(),
               "; new connections keep the previous certificate (", Describe(served.cert_pem),
               ") until the CA, the certificate and its key are whole and belong together"));
    if (options_.on_refused) options_.on_refused(verdict);
  }
  last_verdict_ = verdict;
  return verdict;
}

void TlsMaterial::WatchLoop() {
  const auto interval = absl::ToChronoMilliseconds(options_.refresh_interval);
  std::unique_lock<std::mutex> lock(stop_mutex_);
  while (!stop_changed_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    Refresh().IgnoreError();  // reported through the callbacks
    lock.lock();
  }
}

}  // namespace handoff::rpc
