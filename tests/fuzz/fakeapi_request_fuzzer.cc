// The fake Kubernetes API server's request handling (ApiStore::Handle, what the HTTP server calls
// for every request), on a store seeded as the sandbox seeds it. Every request gets a JSON body,
// and every error is a metav1.Status carrying the response's code, as kube-apiserver answers.
//
// Input: requests separated by lines "%%"; each is a request line "METHOD PATH[?k=v&...]", a
// newline, then the body. They run in order against one store, so a POST can be read back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/strings.h"
#include "common/system/clock.h"
#include "rehearsal/fakeapi/api_store.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/support/fake_clock.h"

namespace handoff::fakeapi {
namespace {

constexpr size_t kMaxRequests = 16;

constexpr char kSeed[] = R"(apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: kube-controller-manager, namespace: kube-system}
spec:
  holderIdentity: cp-1_0
  leaseDurationSeconds: 15
  acquireTime: "2024-01-01T00:00:00.000000Z"
  renewTime: "2024-01-01T00:00:10.000000Z"
---
apiVersion: v1
kind: Node
metadata: {name: cp-1, labels: {node-role.kubernetes.io/control-plane: ""}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kubeadm-config, namespace: kube-system}
data: {ClusterConfiguration: "kubernetesVersion: v1.26.5\n"}
)";

ApiRequest ParseRequest(std::string_view text) {
  ApiRequest request;
  request.user = UserInfo{"kubernetes-admin", {"system:masters", "system:authenticated"}};
  const size_t line_end = text.find('\n');
  const std::string_view line = text.substr(0, line_end);
  request.body = line_end == std::string_view::npos ? "" : std::string(text.substr(line_end + 1));
  const size_t space = line.find(' ');
  request.method = std::string(line.substr(0, space));
  std::string_view target = space == std::string_view::npos ? "" : line.substr(space + 1);
  const size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) {
    for (std::string_view pair : StrSplit(target.substr(question + 1), "&", true)) {
      const size_t equals = pair.find('=');
      request.query[std::string(pair.substr(0, equals))] =
          equals == std::string_view::npos ? "" : std::string(pair.substr(equals + 1));
    }
  }
  if (request.method == "ANON") {
    request.method = "GET";
    request.user = UserInfo{std::string(kAnonymousUser), {}};
  } else if (request.method == "BADTOKEN") {
    request.method = "GET";
    request.user = std::nullopt;
  }
  return request;
}

void CheckResponse(const ApiRequest& request, const ApiResponse& response) {
  const std::string context = request.method + " " + request.path + " -> " +
                              std::to_string(response.status) + " " + response.body;
  FUZZ_CHECK(response.status >= 200 && response.status <= 599, context);
  const Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(!body.is_discarded() && body.is_object(), "the body is not a JSON object: " + context);
  if (response.status >= 400) {
    FUZZ_CHECK(body.value("kind", "") == "Status", "an error without a Status body: " + context);
    FUZZ_CHECK(body.value("code", 0) == response.status, "a Status with another code: " + context);
  }
}

void FuzzOne(std::string_view input) {
  FakeClock clock;
  ApiStore store(clock);
  FUZZ_CHECK(store.Seed(kSeed, "seed.yaml").ok(), "the seed does not load");
  std::vector<std::string_view> requests;
  size_t start = 0;
  while (requests.size() < kMaxRequests) {
    const size_t separator = input.find("\n%%\n", start);
    requests.push_back(input.substr(start, separator == std::string_view::npos
                                               ? std::string_view::npos
                                               : separator - start));
    if (separator == std::string_view::npos) break;
    start = separator + 4;
  }
  for (std::string_view text : requests) {
    const ApiRequest request = ParseRequest(text);
    const ApiResponse response = store.Handle(request);
    CheckResponse(request, response);
    clock.Advance(absl::Seconds(1));
  }
}

}  // namespace
}  // namespace handoff::fakeapi

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::fakeapi::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
