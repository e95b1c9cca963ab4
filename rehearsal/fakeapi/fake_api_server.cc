#include "rehearsal/fakeapi/fake_api_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/base/strings.h"
#include "common/kube/kubeconfig.h"
#include "rehearsal/fakeapi/api_http.h"
#include "rehearsal/fakeapi/http_wire.h"

namespace handoff::fakeapi {
namespace {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;

// The serving thread's stack. A response is printed recursively by nlohmann-json, up to
// kMaxJsonDepth levels at up to 9.4 KB each in a sanitized build (api_store.h); a thread's default
// stack follows RLIMIT_STACK and is 2 MiB when that is unlimited, too little there. Only the pages
// used are committed.
constexpr size_t kServerThreadStackBytes = size_t{64} << 20;
// After an answer that closes the connection (an error, a body left unread), the server stops
// sending and reads (and drops) what the client still sends for this long before closing, so
// the client reads the answer instead of a reset (Go's server waits 500 ms).
constexpr auto kLingerTime = std::chrono::seconds(1);
// When accept() fails for want of file descriptors and no connection can be closed to make room.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr size_t kReadChunk = 64 * 1024;
// Received bytes a connection holds before it is read no further: one request at most, plus
// slack for the start of a pipelined next one.
constexpr size_t kMaxBufferedInput =
    HttpLimits().max_header_bytes + kMaxRequestBodyBytes + kReadChunk;

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;

struct SslDeleter {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
struct SslCtxDeleter {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};

// The subject of the client's verified certificate: CN is the user, each O a group (as
// kube-apiserver's x509 authenticator reads it). std::nullopt when there is no certificate.
std::optional<UserInfo> CertificateUser(const SSL* ssl) {
  if (ssl == nullptr) return std::nullopt;
  std::unique_ptr<X509, decltype(&X509_free)> cert(SSL_get1_peer_certificate(ssl), &X509_free);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
  const kube::CertificateSubject subject = kube::SubjectOfCertificate(cert.get());
  UserInfo user;
  user.name = subject.common_name;
  user.groups = subject.organizations;
  if (user.name.empty()) return std::nullopt;
  user.groups.emplace_back("system:authenticated");
  return user;
}

SteadyClock::duration ToSteady(absl::Duration duration) {
  return std::chrono::duration_cast<SteadyClock::duration>(absl::ToChronoNanoseconds(duration));
}

// One client connection. TLS runs over memory BIOs: the socket is only ever read with recv() and
// written with send(MSG_NOSIGNAL), so a peer that goes away cannot raise SIGPIPE, and the
// connection never blocks inside OpenSSL.
struct Connection {
  uint64_t id = 0;
  int fd = -1;
  std::unique_ptr<SSL, SslDeleter> ssl;  // null for plain HTTP
  BIO* tls_in = nullptr;                 // owned by ssl: bytes received, to decrypt
  BIO* tls_out = nullptr;                // owned by ssl: bytes encrypted, to send
  bool handshake_done = false;
  std::optional<UserInfo> certificate_user;

  HttpRequestReader reader;
  std::string in;       // plaintext received and not yet consumed by `reader`
  std::string out;      // bytes to send
  size_t out_sent = 0;  // of `out`
  bool continue_sent = false;
  bool close_after_write = false;  // then linger
  bool tls_closed = false;         // close_notify queued
  bool peer_done = false;          // the peer sent FIN (or close_notify)
  bool lingering = false;
  int served = 0;
  uint32_t events = 0;  // registered with epoll

  TimePoint ready_at;       // accepted (plain) or handshake done (TLS)
  TimePoint request_start;  // first byte of the current request
  TimePoint idle_since;     // last answer sent
  TimePoint write_start;    // `out` became non-empty
  TimePoint linger_until;
  TimePoint last_activity;  // a byte received or sent: who is quiet longest

  bool writing() const { return out_sent < out.size(); }
};

}  // namespace

class FakeApiServer::Impl {
 public:
  Impl(ApiStore& store, FakeApiServerOptions options)
      : store_(store), options_(std::move(options)) {}

  ~Impl() {
    Stop();
    for (int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
      if (fd >= 0) close(fd);
    }
  }

  absl::Status Start() {
    const bool tls = !options_.cert_file.empty() || !options_.key_file.empty();
    if (tls) {
      if (options_.cert_file.empty() || options_.key_file.empty()) {
        return absl::InvalidArgumentError("TLS needs both a certificate and a key file");
      }
      ctx_.reset(SSL_CTX_new(TLS_server_method()));
      std::string error;
      if (ctx_ == nullptr || !ConfigureTls(*ctx_, error)) {
        return absl::InvalidArgumentError(StrCat("cannot set up TLS: ", error));
      }
      scheme_ = "https";
    } else {
      scheme_ = "http";
    }
    if (absl::Status listening = Listen(); !listening.ok()) return listening;

    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0 || !Register(listen_fd_, kListenerId, EPOLLIN) ||
        !Register(wake_fd_, kWakeId, EPOLLIN)) {
      return absl::InternalError(StrCat("cannot set up epoll: ", std::strerror(errno)));
    }

    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, kServerThreadStackBytes);
    const int created = pthread_create(
        &thread_, &attributes,
        [](void* self) -> void* {
          static_cast<Impl*>(self)->Loop();
          return nullptr;
        },
        this);
    pthread_attr_destroy(&attributes);
    if (created != 0) {
      return absl::ResourceExhaustedError(
          StrCat("cannot start the server thread: ", std::strerror(created)));
    }
    thread_started_ = true;
    return absl::OkStatus();
  }

  void Stop() {
    if (!thread_started_) return;
    thread_started_ = false;
    stopping_ = true;
    const uint64_t one = 1;
    // The eventfd's counter cannot overflow from one write; the loop reads it.
    [[maybe_unused]] const ssize_t written = write(wake_fd_, &one, sizeof(one));
    pthread_join(thread_, nullptr);
    // From here on, connecting is refused, as with a server that is down.
    close(listen_fd_);
    listen_fd_ = -1;
  }

  int port() const { return port_; }
  std::string url() const {
    const std::string host =
        StrContains(options_.host, ":") ? StrCat("[", options_.host, "]") : options_.host;
    return StrCat(scheme_, "://", host, ":", port_);
  }

 private:
  bool ConfigureTls(SSL_CTX& ctx, std::string& error) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    // Client-initiated renegotiation costs the server a handshake per request of the client's.
    SSL_CTX_set_options(&ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, options_.cert_file.c_str()) != 1) {
      error = StrCat("cannot load the certificate ", options_.cert_file);
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, options_.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(&ctx) != 1) {
      error = StrCat("cannot load the key ", options_.key_file, " or it does not match ",
                     options_.cert_file);
      return false;
    }
    if (!options_.client_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(&ctx, options_.client_ca_file.c_str(), nullptr) != 1) {
        error = StrCat("cannot load the client CA ", options_.client_ca_file);
        return false;
      }
      SSL_CTX_set_client_CA_list(&ctx, SSL_load_client_CA_file(options_.client_ca_file.c_str()));
      // Ask for a certificate and verify one that is sent, but serve clients without one (tokens,
      // anonymous), as kube-apiserver does.
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
      // With peer verification on, OpenSSL refuses to resume a session (libcurl resumes when it
      // reconnects) unless the context has a session id context: "internal error" alert.
      static constexpr unsigned char kSessionContext[] = "handoff-fake-apiserver";
      SSL_CTX_set_session_id_context(&ctx, kSessionContext, sizeof(kSessionContext) - 1);
    }
    ERR_clear_error();
    return true;
  }

  absl::Status Listen() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* addresses = nullptr;
    const std::string port = std::to_string(options_.port);
    const absl::Status unavailable =
        absl::UnavailableError(StrCat("cannot listen on ", options_.host, ":", options_.port));
    if (getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &addresses) != 0) {
      return unavailable;
    }
    for (addrinfo* address = addresses; address != nullptr; address = address->ai_next) {
      const int fd =
          socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      const int on = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
      if (bind(fd, address->ai_addr, address->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
        sockaddr_storage bound{};
        socklen_t length = sizeof(bound);
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
        port_ = ntohs(bound.ss_family == AF_INET6
                          ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                          : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
        listen_fd_ = fd;
        break;
      }
      close(fd);
    }
    freeaddrinfo(addresses);
    return listen_fd_ >= 0 ? absl::OkStatus() : unavailable;
  }

  bool Register(int fd, uint64_t id, uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0;
  }

  void Loop() {
    std::vector<epoll_event> events(256);
    while (!stopping_) {
      const int ready =
          epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), TimeoutMs());
      if (ready < 0 && errno != EINTR) break;
      now_ = SteadyClock::now();
      for (int i = 0; i < ready; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kListenerId) {
          Accept();
        } else if (id != kWakeId) {
          OnEvent(id, events[i].events);
        }
      }
      Expire();
    }
    while (!connections_.empty()) Close(connections_.begin()->first);
  }

  // Milliseconds until the earliest deadline (rounded up), -1 for none.
  int TimeoutMs() const {
    std::optional<TimePoint> earliest = accept_paused_until_;
    for (const auto& [id, connection] : connections_) {
      const TimePoint deadline = Deadline(*connection);
      if (!earliest || deadline < *earliest) earliest = deadline;
    }
    if (!earliest) return -1;
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*earliest - SteadyClock::now());
    return static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 60'000));
  }

  // When the connection's current phase must be over.
  TimePoint Deadline(const Connection& c) const {
    if (c.lingering) return c.linger_until;
    if (c.ssl != nullptr && !c.handshake_done) {
      return c.ready_at + ToSteady(options_.read_header_timeout);
    }
    if (c.writing()) return c.write_start + ToSteady(options_.request_timeout);
    if (c.reader.head_complete()) return c.request_start + ToSteady(options_.request_timeout);
    if (c.reader.started()) {
      return (c.served == 0 ? c.ready_at : c.request_start) +
             ToSteady(options_.read_header_timeout);
    }
    return c.served == 0 ? c.ready_at + ToSteady(options_.read_header_timeout)
                         : c.idle_since + ToSteady(options_.idle_timeout);
  }

  void Expire() {
    if (accept_paused_until_ && now_ >= *accept_paused_until_) {
      accept_paused_until_.reset();
      SetListening(true);
    }
    std::vector<uint64_t> expired;
    for (const auto& [id, connection] : connections_) {
      if (now_ >= Deadline(*connection)) expired.push_back(id);
    }
    for (uint64_t id : expired) Close(id);
  }

  void SetListening(bool on) {
    epoll_event event{};
    event.events = on ? static_cast<uint32_t>(EPOLLIN) : 0U;
    event.data.u64 = kListenerId;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &event);
  }

  // The connection that has been quiet longest (of those equally quiet, the oldest), to make
  // room for a new one.
  bool EvictQuietest() {
    if (connections_.empty()) return false;
    auto quietest = std::min_element(
        connections_.begin(), connections_.end(), [](const auto& a, const auto& b) {
          return std::tie(a.second->last_activity, a.first) <
                 std::tie(b.second->last_activity, b.first);
        });
    Close(quietest->first);
    return true;
  }

  void Accept() {
    while (!accept_paused_until_) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: the quietest connection makes room; with none to close, stop
          // accepting for a moment (the listening socket would stay readable, a busy loop).
          if (EvictQuietest()) continue;
          accept_paused_until_ = now_ + kAcceptPause;
          SetListening(false);
        }
        return;
      }
      if (static_cast<int>(connections_.size()) >= std::max(1, options_.max_connections)) {
        EvictQuietest();
      }
      const int on = 1;
      // Answers go out in one write, but without TCP_NODELAY a TLS record split across two
      // segments waits for the client's delayed ACK (40 ms on Linux).
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
      auto connection = std::make_unique<Connection>();
      connection->id = next_id_++;
      connection->fd = fd;
      connection->ready_at = connection->last_activity = now_;
      if (ctx_ != nullptr) {
        connection->ssl.reset(SSL_new(ctx_.get()));
        connection->tls_in = BIO_new(BIO_s_mem());
        connection->tls_out = BIO_new(BIO_s_mem());
        if (connection->ssl == nullptr || connection->tls_in == nullptr ||
            connection->tls_out == nullptr) {
          BIO_free(connection->tls_in);
          BIO_free(connection->tls_out);
          close(fd);
          continue;
        }
        // An empty memory BIO means "wait for more", not end of stream.
        BIO_set_mem_eof_return(connection->tls_in, -1);
        BIO_set_mem_eof_return(connection->tls_out, -1);
        SSL_set_bio(connection->ssl.get(), connection->tls_in, connection->tls_out);
        SSL_set_accept_state(connection->ssl.get());
      }
      connection->events = EPOLLIN;
      if (!Register(fd, connection->id, connection->events)) {
        close(fd);
        continue;
      }
      connections_.emplace(connection->id, std::move(connection));
    }
  }

  void OnEvent(uint64_t id, uint32_t events) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    Connection& c = *it->second;
    bool open = true;
    if ((events & EPOLLIN) != 0) open = Receive(c);
    if (open && (events & EPOLLOUT) != 0) open = Flush(c);
    // HUP: both directions are shut; ERR: the socket failed (a reset). Nothing more can be said.
    if (open && (events & (EPOLLERR | EPOLLHUP)) != 0 && (events & EPOLLIN) == 0) open = false;
    if (open) open = Progress(c);
    if (!open) Close(id);
  }

  // Reads what the socket has (up to the buffer bound). False when the connection is broken.
  bool Receive(Connection& c) {
    char buffer[kReadChunk];
    while (!c.peer_done && (c.lingering || c.in.size() < kMaxBufferedInput)) {
      const ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
      if (n == 0) {
        c.peer_done = true;
        break;
      }
      c.last_activity = now_;
      if (c.lingering) continue;  // dropped: the answer is already on its way
      if (c.ssl == nullptr) {
        c.in.append(buffer, static_cast<size_t>(n));
      } else if (BIO_write(c.tls_in, buffer, static_cast<int>(n)) != n || !Decrypt(c)) {
        return false;
      }
    }
    return true;
  }

  // Runs the handshake and decrypts what tls_in holds into `in`. False when TLS failed.
  bool Decrypt(Connection& c) {
    ERR_clear_error();
    if (!c.handshake_done) {
      const int result = SSL_do_handshake(c.ssl.get());
      const int error = SSL_get_error(c.ssl.get(), result);
      MoveTlsOutput(c);
      if (result != 1) {
        if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return true;
        // Refused (an untrusted client certificate, a protocol error): send the alert, close.
        SendNow(c);
        return false;
      }
      c.handshake_done = true;
      c.ready_at = now_;
      c.certificate_user = CertificateUser(c.ssl.get());
    }
    char plain[16 * 1024];
    while (true) {
      ERR_clear_error();
      const int n = SSL_read(c.ssl.get(), plain, sizeof(plain));
      if (n > 0) {
        c.in.append(plain, static_cast<size_t>(n));
        continue;
      }
      const int error = SSL_get_error(c.ssl.get(), n);
      MoveTlsOutput(c);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return true;
      if (error == SSL_ERROR_ZERO_RETURN) {  // close_notify
        c.peer_done = true;
        return true;
      }
      return false;
    }
  }

  void MoveTlsOutput(Connection& c) {
    char buffer[16 * 1024];
    while (BIO_ctrl_pending(c.tls_out) > 0) {
      const int n = BIO_read(c.tls_out, buffer, sizeof(buffer));
      if (n <= 0) break;
      if (!c.writing()) {
        c.out.clear();
        c.out_sent = 0;
        c.write_start = now_;
      }
      c.out.append(buffer, static_cast<size_t>(n));
    }
  }

  // Queues bytes of the HTTP exchange (encrypted first under TLS) and starts sending them.
  bool Send(Connection& c, std::string_view bytes) {
    if (c.ssl != nullptr) {
      ERR_clear_error();
      // Memory BIOs take everything at once: SSL_write does not return short.
      if (SSL_write(c.ssl.get(), bytes.data(), static_cast<int>(bytes.size())) <= 0) return false;
      MoveTlsOutput(c);
    } else {
      if (!c.writing()) {
        c.out.clear();
        c.out_sent = 0;
        c.write_start = now_;
      }
      c.out.append(bytes);
    }
    return Flush(c);
  }

  // One attempt to send the alert of a failed handshake; the connection closes either way.
  static void SendNow(Connection& c) {
    if (c.writing()) {
      [[maybe_unused]] const ssize_t sent =
          send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    }
  }

  // Sends what the socket takes. False when the connection is broken.
  bool Flush(Connection& c) {
    while (c.writing()) {
      const ssize_t n =
          send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
      c.out_sent += static_cast<size_t>(n);
      c.last_activity = now_;
    }
    c.out.clear();
    c.out_sent = 0;
    c.idle_since = now_;
    return true;
  }

  // Moves the connection on after bytes came or went: serves every complete request it holds,
  // one answer in flight at a time, and decides what to wait for next. False: close it now.
  bool Progress(Connection& c) {
    if (c.lingering) return !c.peer_done;
    if (c.writing() && !Flush(c)) return false;
    if (c.ssl != nullptr && !c.handshake_done) {
      if (c.peer_done) return false;
      UpdateInterest(c);
      return true;
    }
    while (!c.writing() && !c.close_after_write) {
      const bool was_started = c.reader.started();
      c.in.erase(0, c.reader.Consume(c.in));
      if (!was_started && c.reader.started()) c.request_start = now_;
      const HttpRequestReader::Status status = c.reader.status();
      if (status == HttpRequestReader::Status::kIncomplete) {
        if (c.reader.expects_continue() && !c.continue_sent) {
          c.continue_sent = true;
          if (!Send(c, kContinueResponse)) return false;
        }
        break;
      }
      if (status == HttpRequestReader::Status::kBad) {
        c.close_after_write = true;
        if (!Send(c, c.reader.ErrorResponse())) return false;
        break;
      }
      HttpAnswer answer =
          ServeRequest(store_, c.reader.request(), c.certificate_user, options_.tokens);
      ++c.served;
      c.reader.Reset();
      c.continue_sent = false;
      c.close_after_write = answer.close || c.peer_done;
      if (!Send(c, answer.bytes)) return false;
    }
    if (!c.writing() && c.close_after_write && c.ssl != nullptr && !c.tls_closed) {
      // close_notify first, so that the client sees the end of the TLS stream, not a truncation.
      c.tls_closed = true;
      ERR_clear_error();
      SSL_shutdown(c.ssl.get());
      MoveTlsOutput(c);
      if (!Flush(c)) return false;
    }
    if (!c.writing()) {
      if (c.close_after_write) {
        // Stop sending, then drop what still comes until the client closes (or kLingerTime), so
        // that unread request bytes do not turn our close into a reset that loses the answer.
        shutdown(c.fd, SHUT_WR);
        c.lingering = true;
        c.linger_until = now_ + kLingerTime;
        c.in.clear();
        if (c.peer_done) return false;
      } else if (c.peer_done) {
        return false;  // nothing more will come, and nothing is owed
      }
    }
    UpdateInterest(c);
    return true;
  }

  void UpdateInterest(Connection& c) {
    uint32_t events = 0;
    if (!c.peer_done && (c.lingering || c.in.size() < kMaxBufferedInput)) events |= EPOLLIN;
    if (c.writing()) events |= EPOLLOUT;
    if (events == c.events) return;
    epoll_event event{};
    event.events = events;
    event.data.u64 = c.id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &event);
    c.events = events;
  }

  void Close(uint64_t id) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    close(it->second->fd);  // also leaves the epoll set
    connections_.erase(it);
  }

  ApiStore& store_;
  const FakeApiServerOptions options_;
  std::unique_ptr<SSL_CTX, SslCtxDeleter> ctx_;
  std::string scheme_;
  int port_ = 0;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  pthread_t thread_{};
  bool thread_started_ = false;
  std::atomic<bool> stopping_{false};

  // The serving thread's own.
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_id_ = 2;  // after kListenerId and kWakeId
  TimePoint now_ = SteadyClock::now();
  std::optional<TimePoint> accept_paused_until_;
};

FakeApiServer::FakeApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeApiServer::~FakeApiServer() = default;

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(ApiStore& store,
                                                                    FakeApiServerOptions options) {
  auto impl = std::make_unique<Impl>(store, std::move(options));
  if (absl::Status started = impl->Start(); !started.ok()) return started;
  return std::make_unique<FakeApiServer>(std::move(impl));
}

void FakeApiServer::Stop() { impl_->Stop(); }
int FakeApiServer::port() const { return impl_->port(); }
std::string FakeApiServer::url() const { return impl_->url(); }

}  // namespace handoff::fakeapi
