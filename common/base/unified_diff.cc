#include "common/base/unified_diff.h"

#include <algorithm>
#include <vector>

#include "common/base/strings.h"
#include "dtl/dtl.hpp"

namespace handoff {
namespace {

constexpr size_t kContext = 3;

struct Lines {
  std::vector<std::string> lines;
  bool missing_final_newline = false;
};

Lines SplitLines(const std::optional<std::string>& text) {
  Lines out;
  if (!text || text->empty()) return out;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) {
      out.lines.push_back(text->substr(start));
      out.missing_final_newline = true;
      break;
    }
    out.lines.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return out;
}

enum class Edit { kCommon, kDelete, kInsert };

// The shortest edit script from `a` to `b`, computed by dtl (Wu's O(NP) algorithm).
std::vector<Edit> EditScript(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  dtl::Diff<std::string> diff(a, b);
  diff.compose();
  std::vector<Edit> script;
  for (const auto& element : diff.getSes().getSequence()) {
    switch (element.second.type) {
      case dtl::SES_COMMON:
        script.push_back(Edit::kCommon);
        break;
      case dtl::SES_DELETE:
        script.push_back(Edit::kDelete);
        break;
      case dtl::SES_ADD:
        script.push_back(Edit::kInsert);
        break;
    }
  }
  return script;
}

// dtl gives a shortest script but not GNU diff's choice among equally short ones, and its own
// unified hunks carry a fourth trailing context line and do not merge hunks whose context
// overlaps; hunks are therefore grouped below.
// Slides runs of inserted or deleted lines over equal neighbours to join them with other changes,
// as GNU diff's shift_boundaries (analyze.c) does, so that hunks read as diff -u prints them:
// "-b -e +X +z e" rather than "-b +X +z e -e" when a[1] and a[2] are both "e". Then rebuilds the
// script with each change's deletions before its insertions.
std::vector<Edit> ShiftBoundaries(const std::vector<Edit>& script,
                                  const std::vector<std::string>& a,
                                  const std::vector<std::string>& b) {
  // changed[f][i + 1] says whether line i of file f is changed; index 0 and n + 1 are sentinels.
  std::vector<char> changed[2] = {std::vector<char>(a.size() + 2, 0),
                                  std::vector<char>(b.size() + 2, 0)};
  size_t x = 0;
  size_t y = 0;
  for (Edit edit : script) {
    if (edit == Edit::kDelete) changed[0][1 + x] = 1;
    if (edit == Edit::kInsert) changed[1][1 + y] = 1;
    if (edit != Edit::kInsert) ++x;
    if (edit != Edit::kDelete) ++y;
  }
  const std::vector<std::string>* files[2] = {&a, &b};
  for (int f = 0; f < 2; ++f) {
    char* change = changed[f].data() + 1;
    const char* other = changed[1 - f].data() + 1;
    const std::vector<std::string>& lines = *files[f];
    const long end = static_cast<long>(lines.size());
    auto line = [&](long i) -> const std::string& { return lines[static_cast<size_t>(i)]; };
    long i = 0;
    long j = 0;
    while (true) {
      while (i < end && !change[i]) {
        while (other[j++]) continue;
        ++i;
      }
      if (i == end) break;
      long start = i;
      while (change[++i]) continue;
      while (other[j]) ++j;
      long corresponding = 0;
      long run_length = 0;
      do {
        run_length = i - start;
        // Move the run back while the line before it equals its last line.
        while (start > 0 && line(start - 1) == line(i - 1)) {
          change[--start] = 1;
          change[--i] = 0;
          while (change[start - 1]) --start;
          while (other[--j]) continue;
        }
        corresponding = other[j - 1] ? i : end;
        // Then forward while its first line equals the line after it, noting where it last
        // lined up with a change in the other file.
        while (i != end && line(start) == line(i)) {
          change[start++] = 0;
          change[i++] = 1;
          while (change[i]) ++i;
          while (other[++j]) corresponding = i;
        }
      } while (run_length != i - start);
      while (corresponding < i) {
        change[--start] = 1;
        change[--i] = 0;
        while (other[--j]) continue;
      }
    }
  }
  std::vector<Edit> shifted;
  x = 0;
  y = 0;
  while (x < a.size() || y < b.size()) {
    if (x < a.size() && y < b.size() && !changed[0][1 + x] && !changed[1][1 + y]) {
      shifted.push_back(Edit::kCommon);
      ++x, ++y;
      continue;
    }
    for (; x < a.size() && changed[0][1 + x]; ++x) shifted.push_back(Edit::kDelete);
    for (; y < b.size() && changed[1][1 + y]; ++y) shifted.push_back(Edit::kInsert);
  }
  return shifted;
}

std::string Range(size_t start, size_t count) {
  // `diff -u` writes a one-line range as just its start.
  if (count == 1) return StrCat(start);
  return StrCat(start, ",", count);
}

}  // namespace

std::string UnifiedDiff(std::string_view path, const std::optional<std::string>& before,
                        const std::optional<std::string>& after) {
  if (before == after) return "";
  Lines a = SplitLines(before);
  Lines b = SplitLines(after);

  // A missing final newline is a difference too: mark the last line so that it compares unequal.
  constexpr std::string_view kNoNewline = "\n\\ No newline at end of file";
  if (a.missing_final_newline) a.lines.back() += kNoNewline;
  if (b.missing_final_newline) b.lines.back() += kNoNewline;

  const std::vector<Edit> script = ShiftBoundaries(EditScript(a.lines, b.lines), a.lines, b.lines);
  // Line positions before each step of the script.
  std::vector<size_t> old_at(script.size() + 1, 0);
  std::vector<size_t> new_at(script.size() + 1, 0);
  for (size_t i = 0; i < script.size(); ++i) {
    old_at[i + 1] = old_at[i] + (script[i] != Edit::kInsert ? 1 : 0);
    new_at[i + 1] = new_at[i] + (script[i] != Edit::kDelete ? 1 : 0);
  }

  const std::string_view relative = StripPrefix(path, "/");
  std::string out = StrCat("--- ", before ? StrCat("a/", relative) : "/dev/null", "\n", "+++ ",
                           after ? StrCat("b/", relative) : "/dev/null", "\n");
  size_t i = 0;
  while (i < script.size()) {
    if (script[i] == Edit::kCommon) {
      ++i;
      continue;
    }
    // A hunk runs from kContext lines before its first change to kContext lines after its last;
    // changes separated by at most 2 * kContext unchanged lines share one hunk, as in GNU diff.
    const size_t first = i >= kContext ? i - kContext : 0;
    size_t last_change = i;
    for (size_t j = i + 1; j < script.size() && j - last_change <= 2 * kContext + 1; ++j) {
      if (script[j] != Edit::kCommon) last_change = j;
    }
    const size_t end = std::min(script.size(), last_change + 1 + kContext);
    const size_t old_count = old_at[end] - old_at[first];
    const size_t new_count = new_at[end] - new_at[first];
    // An empty range names the line before it, so a created file reads "-0,0".
    StrAppend(&out, "@@ -", Range(old_at[first] + (old_count > 0 ? 1 : 0), old_count), " +",
              Range(new_at[first] + (new_count > 0 ? 1 : 0), new_count), " @@\n");
    for (size_t j = first; j < end; ++j) {
      switch (script[j]) {
        case Edit::kCommon:
          StrAppend(&out, " ", a.lines[old_at[j]], "\n");
          break;
        case Edit::kDelete:
          StrAppend(&out, "-", a.lines[old_at[j]], "\n");
          break;
        case Edit::kInsert:
          StrAppend(&out, "+", b.lines[new_at[j]], "\n");
          break;
      }
    }
    i = end;
  }
  return out;
}

}  // namespace handoff
