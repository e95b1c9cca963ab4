#include "rehearsal/imds/fake_imds.h"

#include <sys/socket.h>

#include <charconv>
#include <condition_variable>
#include <mutex>
#include <set>

#include "common/base/strings.h"
#include "httplib.h"
#include "rehearsal/sandbox/httplib_serving.h"

namespace handoff::sandbox {

namespace {
constexpr std::string_view kTagsPath = "/latest/meta-data/tags/instance";
constexpr char kText[] = "text/plain";
}  // namespace

class FakeImds::Impl {
 public:
  explicit Impl(FakeImdsOptions options) : options_(std::move(options)) {}
  ~Impl() { Stop(); }

  absl::Status Start() {
    server_ = std::make_unique<httplib::Server>();
    // httplib's default sets SO_REUSEPORT, which would let a second server bind the same port.
    server_->set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_->Put("/latest/api/token", [this](const httplib::Request& request,
                                             httplib::Response& response) {
      if (!Answering()) return;
      // IMDSv2 requires a TTL from 1 s to 6 h (21600 s); anything else is 400 Bad Request.
      const std::string ttl = request.get_header_value("X-aws-ec2-metadata-token-ttl-seconds");
      int seconds = 0;
      auto [end, error] = std::from_chars(ttl.data(), ttl.data() + ttl.size(), seconds);
      if (ttl.empty() || error != std::errc() || end != ttl.data() + ttl.size() || seconds < 1 ||
          seconds > 21600) {
        response.status = 400;
        response.set_content("missing or invalid X-aws-ec2-metadata-token-ttl-seconds", kText);
        return;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      std::string token = StrCat("fake-imds-token-", options_.port, "-", tokens_.size() + 1);
      tokens_.insert(token);
      response.status = 200;
      response.set_content(token, kText);
    });
    server_->Get(R"(/latest/.*)", [this](const httplib::Request& request,
                                          httplib::Response& response) {
      if (!Answering()) return;
      std::lock_guard<std::mutex> lock(mutex_);
      const std::string token = request.get_header_value("X-aws-ec2-metadata-token");
      if (tokens_.count(token) == 0) {
        ++unauthorized_;
        response.status = 401;
        return;
      }
      std::string_view path = request.path;
      for (auto [served, value] :
           {std::pair{"/latest/meta-data/instance-id", &options_.instance_id},
            std::pair{"/latest/meta-data/local-hostname", &options_.local_hostname},
            std::pair{"/latest/meta-data/placement/availability-zone",
                      &options_.availability_zone}}) {
        if (path == served) {
          response.status = 200;
          response.set_content(*value, kText);
          return;
        }
      }
      if (path == "/latest/dynamic/instance-identity/document") {
        const std::string& zone = options_.availability_zone;
        response.status = 200;
        response.set_content(
            StrCat("{\n  \"accountId\" : \"", options_.account_id, "\",\n  \"availabilityZone\" : \"",
                   zone, "\",\n  \"instanceId\" : \"", options_.instance_id,
                   "\",\n  \"region\" : \"", zone.substr(0, zone.empty() ? 0 : zone.size() - 1),
                   "\"\n}"),
            "application/json");
        return;
      }
      if (StartsWith(path, kTagsPath) && options_.tags.has_value()) {
        std::string_view key = StripPrefix(StripPrefix(path, kTagsPath), "/");
        if (key.empty() && (path.size() == kTagsPath.size() || path.back() == '/')) {
          std::vector<std::string> keys;
          for (const auto& entry : *options_.tags) keys.push_back(entry.first);
          response.status = 200;
          response.set_content(StrJoin(keys, "\n"), kText);
          return;
        }
        auto found = options_.tags->find(std::string(key));
        if (found != options_.tags->end()) {
          response.status = 200;
          response.set_content(found->second, kText);
          return;
        }
      }
      response.status = 404;
    });
    port_ = BindHttplib(*server_, options_.host, options_.port);
    if (port_ <= 0) {
      return absl::UnavailableError(StrCat("the fake instance metadata cannot listen on ",
                                           options_.host, ":", options_.port));
    }
    serving_.Start(*server_);
    return absl::OkStatus();
  }

  void Stop() {
    {
      // Held requests first: httplib's stop joins its workers, which must not be waiting.
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    released_.notify_all();
    serving_.Stop();
  }

  // False once the server stops, after holding the request for as long as it runs when
  // options_.answer is false.
  bool Answering() {
    if (options_.answer) return true;
    std::unique_lock<std::mutex> lock(mutex_);
    released_.wait(lock, [this] { return stopping_; });
    return false;
  }

  std::string Endpoint() const {
    const bool v6 = StrContains(options_.host, ":");
    return StrCat("http://", v6 ? "[" : "", options_.host, v6 ? "]" : "", ":", port_);
  }
  int port() const { return port_; }
  void SetTags(std::optional<std::map<std::string, std::string>> tags) {
    std::lock_guard<std::mutex> lock(mutex_);
    options_.tags = std::move(tags);
  }
  int unauthorized() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return unauthorized_;
  }
  int tokens_issued() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int>(tokens_.size());
  }

 private:
  FakeImdsOptions options_;  // tags guarded by mutex_
  std::unique_ptr<httplib::Server> server_;
  HttplibServingThread serving_;  // after server_: stops before it goes
  int port_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  bool stopping_ = false;
  std::set<std::string> tokens_;
  int unauthorized_ = 0;
};

FakeImds::FakeImds(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FakeImds::~FakeImds() = default;

absl::StatusOr<std::unique_ptr<FakeImds>> FakeImds::Start(FakeImdsOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  if (absl::Status started = impl->Start(); !started.ok()) return started;
  return std::make_unique<FakeImds>(std::move(impl));
}

std::string FakeImds::endpoint() const { return impl_->Endpoint(); }
int FakeImds::port() const { return impl_->port(); }
void FakeImds::SetTags(std::optional<std::map<std::string, std::string>> tags) {
  impl_->SetTags(std::move(tags));
}
int FakeImds::unauthorized_requests() const { return impl_->unauthorized(); }
int FakeImds::tokens_issued() const { return impl_->tokens_issued(); }

}  // namespace handoff::sandbox
