#include "agent/cloud/aws_signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/base/strings.h"

namespace handoff {
namespace {

constexpr char kAlgorithm[] = "AWS4-HMAC-SHA256";
constexpr char kContentType[] = "application/x-www-form-urlencoded; charset=utf-8";

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    text.push_back(kDigits[bytes[i] >> 4]);
    text.push_back(kDigits[bytes[i] & 0xf]);
  }
  return text;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  return Hex(digest, size);
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &size);
  return std::string(reinterpret_cast<const char*>(mac), size);
}

}  // namespace

std::string FormEncode(std::string_view value) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string text;
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
        (byte >= '0' && byte <= '9') || byte == '-' || byte == '_' || byte == '.' || byte == '~') {
      text.push_back(c);
    } else {
      text.push_back('%');
      text.push_back(kDigits[byte >> 4]);
      text.push_back(kDigits[byte & 0xf]);
    }
  }
  return text;
}

std::vector<std::pair<std::string, std::string>> SignPost(const SignedPost& request,
                                                          const AwsCredentials& credentials,
                                                          const std::string& region,
                                                          const std::string& service,
                                                          absl::Time now) {
  const std::string amz_date = absl::FormatTime("%Y%m%dT%H%M%SZ", now, absl::UTCTimeZone());
  const std::string date = amz_date.substr(0, 8);
  // Lower-case and sorted by name, as the canonical request lists them.
  std::vector<std::pair<std::string, std::string>> headers = {
      {"content-type", kContentType}, {"host", request.host}, {"x-amz-date", amz_date}};
  if (!credentials.session_token.empty()) {
    headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::string canonical_headers;
  std::vector<std::string> names;
  for (const auto& [name, value] : headers) {
    StrAppend(&canonical_headers, name, ":", StripWhitespace(value), "\n");
    names.push_back(name);
  }
  const std::string signed_headers = StrJoin(names, ";");
  const std::string canonical_request =
      StrCat("POST\n/\n\n", canonical_headers, "\n", signed_headers, "\n", Sha256Hex(request.body));
  const std::string scope = StrCat(date, "/", region, "/", service, "/aws4_request");
  const std::string string_to_sign =
      StrCat(kAlgorithm, "\n", amz_date, "\n", scope, "\n", Sha256Hex(canonical_request));
  std::string key = HmacSha256(StrCat("AWS4", credentials.secret_access_key), date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, service);
  key = HmacSha256(key, "aws4_request");
  const std::string signature = HmacSha256(key, string_to_sign);
  headers.emplace_back(
      "authorization",
      StrCat(kAlgorithm, " Credential=", credentials.access_key_id, "/", scope,
             ", SignedHeaders=", signed_headers, ", Signature=",
             Hex(reinterpret_cast<const unsigned char*>(signature.data()), signature.size())));
  return headers;
}

}  // namespace handoff
