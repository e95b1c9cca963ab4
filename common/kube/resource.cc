#include "common/kube/resource.h"

#include <cstdio>

#include "common/base/strings.h"

namespace handoff::kube {
namespace {

bool IsUnreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string Escape(std::string_view text, std::string_view also_keep) {
  std::string out;
  for (char c : text) {
    if (IsUnreserved(c) || also_keep.find(c) != std::string_view::npos) {
      out.push_back(c);
    } else {
      char buffer[4];
      std::snprintf(buffer, sizeof(buffer), "%%%02X", static_cast<unsigned char>(c));
      out += buffer;
    }
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string ResourceType::QualifiedName() const {
  return group.empty() ? std::string(plural) : StrCat(plural, ".", group);
}

std::string ResourceType::ApiVersion() const {
  return group.empty() ? std::string(version) : StrCat(group, "/", version);
}

const std::vector<const ResourceType*>& KnownResourceTypes() {
  static const std::vector<const ResourceType*> kTypes = {&kLeases,
                                                          &kRoles,
                                                          &kRoleBindings,
                                                          &kNodes,
                                                          &kPods,
                                                          &kServiceAccounts,
                                                          &kConfigMaps,
                                                          &kDaemonSets,
                                                          &kClusterRoles,
                                                          &kClusterRoleBindings,
                                                          &kPersistentVolumes,
                                                          &kStorageClasses,
                                                          &kCsiDrivers,
                                                          &kSubjectAccessReviews};
  return kTypes;
}

const ResourceType* FindResourceTypeByKind(std::string_view api_version, std::string_view kind) {
  for (const ResourceType* type : KnownResourceTypes()) {
    if (type->ApiVersion() == api_version && type->kind == kind) return type;
  }
  return nullptr;
}

const ResourceType* FindResourceTypeByPath(std::string_view group, std::string_view version,
                                           std::string_view plural) {
  for (const ResourceType* type : KnownResourceTypes()) {
    if (type->group == group && type->version == version && type->plural == plural) return type;
  }
  return nullptr;
}

std::string ObjectRef::ToString() const {
  if (type == nullptr) return name;
  return ns.empty() ? StrCat(type->kind, " ", name) : StrCat(type->kind, " ", ns, "/", name);
}

std::string CollectionPath(const ResourceType& type, std::string_view ns) {
  std::string path = type.group.empty() ? StrCat("/api/", type.version)
                                        : StrCat("/apis/", type.group, "/", type.version);
  if (type.namespaced && !ns.empty()) StrAppend(&path, "/namespaces/", EscapePathSegment(ns));
  StrAppend(&path, "/", type.plural);
  return path;
}

std::string ObjectPath(const ObjectRef& ref) {
  return StrCat(CollectionPath(*ref.type, ref.ns), "/", EscapePathSegment(ref.name));
}

std::string EscapePathSegment(std::string_view segment) { return Escape(segment, ":@"); }

std::string EscapeQueryValue(std::string_view value) { return Escape(value, ""); }

std::optional<std::string> Unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int high = HexValue(text[i + 1]);
    const int low = HexValue(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<char>(high * 16 + low));
    i += 2;
  }
  return out;
}

std::string StringAt(const Json& object, std::initializer_list<std::string_view> keys) {
  const Json* node = &object;
  for (std::string_view key : keys) {
    if (!node->is_object()) return "";
    auto it = node->find(std::string(key));
    if (it == node->end()) return "";
    node = &*it;
  }
  return node->is_string() ? node->get<std::string>() : "";
}

std::string ObjectName(const Json& object) { return StringAt(object, {"metadata", "name"}); }
std::string ObjectNamespace(const Json& object) {
  return StringAt(object, {"metadata", "namespace"});
}
std::string ResourceVersion(const Json& object) {
  return StringAt(object, {"metadata", "resourceVersion"});
}

}  // namespace handoff::kube
