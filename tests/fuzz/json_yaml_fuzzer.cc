// Kubernetes objects between JSON and YAML (kube::ParseObjects: the fake API server's seed files,
// plans' object diffs): any text gives objects or an error naming the file, and every object
// comes back from JsonToYaml → ParseObjects as the same JSON (a plan's YAML must mean the object
// that is sent).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/kube/json_yaml.h"
#include "tests/fuzz/fuzz_check.h"

namespace handoff::kube {
namespace {

std::string Show(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void FuzzOne(std::string_view text) {
  absl::StatusOr<std::vector<Json>> objects = ParseObjects(text, "objects.yaml");
  if (!objects.ok()) {
    FUZZ_CHECK(objects.status().message().find("objects.yaml") != std::string_view::npos,
               "the error does not name the file: " + objects.status().ToString());
    return;
  }
  for (const Json& object : *objects) {
    FUZZ_CHECK(object.is_object(), "not an object: " + Show(object));
    // Objects are sent as JSON (the fake API server serves what it was seeded with), and
    // nlohmann::json refuses to write a string that is not UTF-8.
    bool serializable = true;
    try {
      (void)object.dump();
    } catch (const Json::type_error&) {
      serializable = false;
    }
    FUZZ_CHECK(serializable,
               "an object that cannot be written as JSON (not UTF-8): " + Show(object));
    const std::string yaml = JsonToYaml(object);
    absl::StatusOr<std::vector<Json>> reparsed = ParseObjects(yaml, "emitted.yaml");
    FUZZ_CHECK(reparsed.ok(), reparsed.status().ToString() + "\nemitted:\n" + yaml);
    FUZZ_CHECK(reparsed->size() == 1, "not one object; emitted:\n" + yaml);
    FUZZ_CHECK(reparsed->front() == object, "the object changed: " + Show(object) + " became " +
                                                Show(reparsed->front()) + "\nemitted:\n" + yaml);
    // The JSON wire form reads back the same way.
    const std::string json = Show(object);
    absl::StatusOr<std::vector<Json>> from_json = ParseObjects(json, "emitted.json");
    FUZZ_CHECK(from_json.ok() && from_json->size() == 1 && from_json->front() == object,
               "the JSON form does not read back: " + json);
  }
}

}  // namespace
}  // namespace handoff::kube

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  handoff::kube::FuzzOne(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
