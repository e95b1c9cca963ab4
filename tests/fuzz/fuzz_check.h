// What a fuzz target asserts: a property that must hold for every input the parser accepts. A
// violated property prints what was expected and aborts, which libFuzzer reports as a crash and
// saves the input that caused it.
#ifndef HANDOFF_TESTS_FUZZ_FUZZ_CHECK_H_
#define HANDOFF_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace handoff::fuzz {

// Prints "FUZZ_CHECK failed at FILE:LINE: CONDITION: DETAIL" and aborts.
[[noreturn]] inline void CheckFailed(const char* file, int line, const char* condition,
                                     const std::string& detail) {
  std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: %s\n", file, line, condition,
               detail.c_str());
  std::abort();
}

}  // namespace handoff::fuzz

// `detail` is anything a std::string can be made from (absl::string_view included: Debian's
// abseil keeps its own string_view), evaluated only on failure.
#define FUZZ_CHECK(condition, detail)                                                    \
  do {                                                                                   \
    if (!(condition)) {                                                                  \
      ::handoff::fuzz::CheckFailed(__FILE__, __LINE__, #condition, std::string(detail)); \
    }                                                                                    \
  } while (false)

#endif  // HANDOFF_TESTS_FUZZ_FUZZ_CHECK_H_
