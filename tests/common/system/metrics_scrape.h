// Test helpers for the daemons' /metrics: a scrape over HTTP (libcurl), `promtool check metrics`
// on its text, and a sample's value read from it.
#ifndef HANDOFF_TESTS_COMMON_SYSTEM_METRICS_SCRAPE_H_
#define HANDOFF_TESTS_COMMON_SYSTEM_METRICS_SCRAPE_H_

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace handoff::testing {

// The body of GET `url`; nullopt when the request failed or the status was not 200.
inline std::optional<std::string> Scrape(const std::string& url) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return std::nullopt;
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(
      curl, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t count, void* out) {
        static_cast<std::string*>(out)->append(data, size * count);
        return size * count;
      });
  const CURLcode done = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (done != CURLE_OK || status != 200) return std::nullopt;
  return body;
}

// Whether promtool (Debian's prometheus package) is on the PATH.
inline bool HavePromtool() { return system("command -v promtool >/dev/null 2>&1") == 0; }

// `promtool check metrics` on `text`: "" when it passes, else its exit status and output.
inline std::string PromtoolProblems(const std::string& text) {
  char path[] = "/tmp/handoff-metrics-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "cannot create a temp file";
  close(fd);
  std::ofstream(path) << text;
  const std::string command = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  size_t read = 0;
  while (pipe != nullptr && (read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.append(buffer, read);
  }
  const int status = pipe != nullptr ? pclose(pipe) : -1;
  unlink(path);
  if (status == 0) return "";
  return "promtool exit status " + std::to_string(status) + ": " + output;
}

// The value of the sample `series` (name with its labels as exposed, e.g.
// handoff_agent_moves_total{outcome="succeeded"}) in `text`; nullopt when absent.
inline std::optional<double> SampleValue(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

}  // namespace handoff::testing

#endif  // HANDOFF_TESTS_COMMON_SYSTEM_METRICS_SCRAPE_H_
