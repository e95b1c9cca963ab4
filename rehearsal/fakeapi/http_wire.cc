#include "rehearsal/fakeapi/http_wire.h"

#include <algorithm>
#include <cstring>

#include "common/base/strings.h"

namespace handoff::fakeapi {
namespace {

// Go's net/http/internal/chunked.go: a chunk-size line longer than this is refused.
constexpr size_t kMaxChunkLine = 4096;
// Go's allowance for chunk framing beyond the data (see ParseChunkSize).
constexpr int64_t kMaxChunkExcess = 16 * 1024;

// RFC 9110 token characters: what a method or a header name may hold.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

bool IsToken(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), IsTokenChar);
}

// Control characters other than horizontal tab, which no header value or target may carry.
bool HasControlCharacter(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t') || byte == 0x7f;
  });
}

std::string_view TrimSpaceAndTab(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::string AsciiLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && AsciiLower(a) == AsciiLower(b);
}

namespace {

// Whether a comma-separated header value lists `token` (case-insensitive), as Go's hasToken.
bool HasToken(std::string_view value, std::string_view token) {
  for (std::string_view part : StrSplit(value, ",", /*skip_empty=*/true)) {
    if (EqualsIgnoreCase(TrimSpaceAndTab(part), token)) return true;
  }
  return false;
}

}  // namespace

std::string_view ParsedRequest::Header(std::string_view lower_case_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_case_name) return value;
  }
  return "";
}

HttpRequestReader::HttpRequestReader(HttpLimits limits) : limits_(limits) {}

void HttpRequestReader::Reset() {
  status_ = Status::kIncomplete;
  state_ = State::kHead;
  started_ = false;
  expects_continue_ = false;
  request_ = ParsedRequest();
  head_.clear();
  line_start_ = 0;
  request_line_seen_ = false;
  line_.clear();
  trailer_bytes_ = 0;
  remaining_ = 0;
  chunk_excess_ = 0;
  error_code_ = 0;
  error_detail_.clear();
}

void HttpRequestReader::Fail(int code, std::string detail) {
  status_ = Status::kBad;
  error_code_ = code;
  error_detail_ = std::move(detail);
  // Nothing more is buffered for a request that will not be served.
  head_.clear();
  line_.clear();
  request_.body.clear();
}

void HttpRequestReader::Finish() {
  state_ = State::kDone;
  status_ = Status::kComplete;
  head_.clear();
  line_.clear();
}

size_t HttpRequestReader::Consume(std::string_view input) {
  size_t used = 0;
  while (status_ == Status::kIncomplete && used < input.size()) {
    started_ = true;
    used += state_ == State::kHead ? ConsumeHead(input.substr(used)) : ConsumeBody(input.substr(used));
  }
  return used;
}

size_t HttpRequestReader::ConsumeHead(std::string_view input) {
  size_t used = 0;
  while (used < input.size()) {
    const char* start = input.data() + used;
    const size_t available = input.size() - used;
    const void* newline = std::memchr(start, '\n', available);
    const size_t take =
        newline != nullptr ? static_cast<size_t>(static_cast<const char*>(newline) - start) + 1
                           : available;
    if (head_.size() + take > limits_.max_header_bytes) {
      Fail(431, "");
      return used + take;
    }
    head_.append(start, take);
    used += take;
    if (newline == nullptr) return used;
    std::string_view line = std::string_view(head_).substr(line_start_);
    line.remove_suffix(1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line_start_ = head_.size();
    // Empty lines before the request line are skipped (RFC 9112 section 2.2); they still count
    // against the header limit. An empty line after it ends the head.
    if (!line.empty()) {
      request_line_seen_ = true;
    } else if (request_line_seen_) {
      ParseHead();
      return used;
    }
  }
  return used;
}

void HttpRequestReader::ParseHead() {
  std::string_view head = head_;
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const size_t newline = head.find('\n');
    std::string_view line = head.substr(0, newline);
    head.remove_prefix(newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() && lines.empty()) continue;  // before the request line
    if (line.empty()) break;                     // the end of the head
    lines.push_back(line);
  }

  // The request line, split as Go's net/http does: METHOD SP TARGET SP VERSION.
  const std::string_view request_line = lines.front();
  const size_t first_space = request_line.find(' ');
  const size_t second_space = first_space == std::string_view::npos
                                  ? std::string_view::npos
                                  : request_line.find(' ', first_space + 1);
  if (second_space == std::string_view::npos) return Fail(400, "malformed HTTP request");
  const std::string_view method = request_line.substr(0, first_space);
  const std::string_view target =
      request_line.substr(first_space + 1, second_space - first_space - 1);
  const std::string_view version = request_line.substr(second_space + 1);
  if (!IsToken(method)) return Fail(400, "invalid method");
  if (target.empty() || HasControlCharacter(target)) return Fail(400, "invalid request target");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return Fail(400, "malformed HTTP version");
  }
  if (version[5] != '1') return Fail(505, "");
  request_.method = std::string(method);
  request_.target = std::string(target);
  request_.minor_version = version[7] - '0';

  for (size_t i = 1; i < lines.size() && status_ == Status::kIncomplete; ++i) {
    ParseHeaderLine(lines[i]);
  }
  if (status_ != Status::kIncomplete) return;

  // Host: exactly one in HTTP/1.1 (Go: "missing required Host header", "too many Host headers").
  size_t hosts = 0;
  std::vector<std::string_view> lengths;
  std::vector<std::string_view> encodings;
  for (const auto& [name, value] : request_.headers) {
    if (name == "host") ++hosts;
    if (name == "content-length") lengths.push_back(value);
    if (name == "transfer-encoding") encodings.push_back(value);
  }
  if (request_.minor_version >= 1 && hosts == 0) return Fail(400, "missing required Host header");
  if (hosts > 1) return Fail(400, "too many Host headers");

  const std::string_view connection = request_.Header("connection");
  request_.keep_alive = request_.minor_version >= 1 ? !HasToken(connection, "close")
                                                    : HasToken(connection, "keep-alive");

  bool chunked = false;
  if (!encodings.empty()) {
    if (encodings.size() != 1 || !EqualsIgnoreCase(TrimSpaceAndTab(encodings[0]), "chunked")) {
      return Fail(501, "");
    }
    // Both framings at once is how requests are smuggled past proxies; refused outright.
    if (!lengths.empty()) return Fail(400, "both Transfer-Encoding and Content-Length");
    chunked = true;
  }
  uint64_t length = 0;
  if (!lengths.empty()) {
    for (std::string_view value : lengths) {
      if (value != lengths.front()) {
        return Fail(400, "message cannot contain multiple Content-Length headers");
      }
    }
    const std::string_view digits = lengths.front();
    if (digits.empty() || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return Fail(400, "bad Content-Length");
    }
    for (char c : digits) length = length * 10 + static_cast<uint64_t>(c - '0');
  }

  const std::string_view expect = request_.Header("expect");
  const bool has_body = chunked || length > 0;
  if (!expect.empty()) {
    if (!HasToken(expect, "100-continue") || request_.minor_version < 1) return Fail(417, "");
    expects_continue_ = has_body;
  }

  head_.clear();
  line_start_ = 0;
  if (chunked) {
    state_ = State::kChunkSize;
  } else if (length > limits_.max_body_bytes) {
    request_.body_too_large = true;
    Finish();
  } else if (length > 0) {
    remaining_ = length;
    request_.body.reserve(static_cast<size_t>(length));
    state_ = State::kBody;
  } else {
    Finish();
  }
}

void HttpRequestReader::ParseHeaderLine(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    return Fail(400, "obsolete header line folding is not supported");
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return Fail(400, "malformed MIME header line");
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = TrimSpaceAndTab(line.substr(colon + 1));
  if (!IsToken(name)) return Fail(400, "invalid header name");
  if (HasControlCharacter(value)) return Fail(400, "invalid header value");
  request_.headers.emplace_back(AsciiLower(name), std::string(value));
}

bool HttpRequestReader::ReadLine(std::string_view input, size_t& used, size_t max_line) {
  const char* start = input.data() + used;
  const size_t available = input.size() - used;
  const void* newline = std::memchr(start, '\n', available);
  const size_t take =
      newline != nullptr ? static_cast<size_t>(static_cast<const char*>(newline) - start) + 1
                         : available;
  used += take;
  if (line_.size() + take > max_line) {
    Fail(400, "line too long");
    return false;
  }
  line_.append(start, take);
  if (newline == nullptr) return false;
  line_.pop_back();
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  return true;
}

void HttpRequestReader::ParseChunkSize(std::string_view line) {
  // Go's chunked reader, net/http/internal/chunked.go: 16 bytes of framing per chunk plus twice
  // its data are free; beyond that, at most 16 KiB of framing (extensions, tiny chunks) in all.
  chunk_excess_ += static_cast<int64_t>(line.size()) + 2 + 2;  // the line ends, the data's CRLF
  const size_t extension = line.find(';');
  std::string_view digits = TrimSpaceAndTab(line.substr(0, extension));
  if (digits.empty()) return Fail(400, "empty hex number for chunk length");
  if (digits.size() > 16) return Fail(400, "http chunk length too large");
  uint64_t size = 0;
  for (char c : digits) {
    int value;
    if (c >= '0' && c <= '9') {
      value = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      value = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      value = c - 'A' + 10;
    } else {
      return Fail(400, "invalid byte in chunk length");
    }
    size = (size << 4) | static_cast<uint64_t>(value);
  }
  // A chunk this large pays for any framing seen so far (and 2 * size would overflow).
  const int64_t allowance = size > static_cast<uint64_t>(kMaxChunkExcess)
                                ? 2 * kMaxChunkExcess
                                : 16 + 2 * static_cast<int64_t>(size);
  chunk_excess_ = std::max<int64_t>(0, chunk_excess_ - allowance);
  if (chunk_excess_ > kMaxChunkExcess) {
    return Fail(400, "chunked encoding contains too much non-data");
  }
  if (size == 0) {
    state_ = State::kTrailer;
    return;
  }
  if (size > limits_.max_body_bytes - request_.body.size()) {
    request_.body_too_large = true;
    request_.body.clear();
    request_.body.shrink_to_fit();
    Finish();
    return;
  }
  remaining_ = size;
  state_ = State::kChunkData;
}

size_t HttpRequestReader::ConsumeBody(std::string_view input) {
  size_t used = 0;
  while (used < input.size() && status_ == Status::kIncomplete) {
    switch (state_) {
      case State::kBody:
      case State::kChunkData: {
        const size_t take = static_cast<size_t>(
            std::min<uint64_t>(remaining_, static_cast<uint64_t>(input.size() - used)));
        request_.body.append(input.data() + used, take);
        used += take;
        remaining_ -= take;
        if (remaining_ == 0) {
          if (state_ == State::kBody) {
            Finish();
          } else {
            state_ = State::kChunkDataEnd;
          }
        }
        break;
      }
      case State::kChunkSize:
        if (ReadLine(input, used, kMaxChunkLine)) {
          const std::string line = std::move(line_);
          line_.clear();
          ParseChunkSize(line);
        }
        break;
      case State::kChunkDataEnd:
        if (ReadLine(input, used, 2)) {
          if (!line_.empty()) {
            Fail(400, "malformed chunked encoding");
            return used;
          }
          state_ = State::kChunkSize;
        }
        break;
      case State::kTrailer: {
        // Trailer fields count against the header limit; they are read and dropped, as nothing
        // the fake serves looks at them.
        const size_t budget = limits_.max_header_bytes - std::min(limits_.max_header_bytes,
                                                                  trailer_bytes_);
        if (ReadLine(input, used, budget)) {
          trailer_bytes_ += line_.size() + 2;
          const bool end = line_.empty();
          line_.clear();
          if (end) Finish();
        } else if (status_ == Status::kBad) {
          error_code_ = 431;
          error_detail_.clear();
        }
        break;
      }
      case State::kHead:
      case State::kDone:
        return used;
    }
  }
  return used;
}

std::string HttpRequestReader::ErrorResponse() const {
  std::string body;
  switch (error_code_) {
    case 501:
      body = "Unsupported transfer encoding";
      break;
    case 400:
      body = StrCat("400 ", ReasonPhrase(400));
      if (!error_detail_.empty()) StrAppend(&body, ": ", error_detail_);
      break;
    default:
      body = StrCat(error_code_, " ", ReasonPhrase(error_code_));
      break;
  }
  return SerializeResponse(error_code_, "text/plain; charset=utf-8", {}, body, /*close=*/true);
}

std::string_view ReasonPhrase(int code) {
  switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
  }
}

std::string SerializeResponse(int code, std::string_view content_type, const HttpHeaders& headers,
                              std::string_view body, bool close, bool head_only) {
  std::string out = StrCat("HTTP/1.1 ", code, " ", ReasonPhrase(code), "\r\n");
  if (!content_type.empty()) StrAppend(&out, "Content-Type: ", content_type, "\r\n");
  StrAppend(&out, "Content-Length: ", body.size(), "\r\n");
  for (const auto& [name, value] : headers) StrAppend(&out, name, ": ", value, "\r\n");
  if (close) out.append("Connection: close\r\n");
  out.append("\r\n");
  if (!head_only) out.append(body);
  return out;
}

}  // namespace handoff::fakeapi
