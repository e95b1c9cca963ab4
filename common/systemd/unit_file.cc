#include "common/systemd/unit_file.h"

#include <optional>
#include <utility>

#include "common/base/strings.h"
#include "common/fs/read_limit.h"

namespace handoff::systemd {
namespace {

constexpr std::string_view kBlank = " \t\r\n";

std::string_view Strip(std::string_view text) {
  const size_t first = text.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlank) - first + 1);
}

absl::Status Invalid(const Origin& origin, std::string_view what) {
  return absl::InvalidArgumentError(StrCat(Describe(origin), ": ", what));
}

struct UnitLine {
  std::string section;
  std::string key;
  std::string value;
  Origin origin;
};

// The settings of a unit file (src/shared/conf-parser.c): [Section] headers, Key=Value, comment
// lines starting with # or ;, a line ending in a backslash continued on the next (the backslash
// becomes a space, comment lines within are skipped).
absl::StatusOr<std::vector<UnitLine>> ParseUnitLines(std::string_view text,
                                                     std::string_view path) {
  std::vector<UnitLine> lines;
  std::string section;
  std::string continued;
  int continued_from = 0;
  int number = 0;
  std::vector<std::string_view> raw_lines = StrSplit(text, "\n");
  raw_lines.push_back("");  // a line continued at the end of the file ends there
  for (std::string_view raw : raw_lines) {
    ++number;
    std::string_view line = Strip(raw);
    if (!line.empty() && (line.front() == '#' || line.front() == ';')) continue;
    if (continued.empty() && line.empty()) continue;
    if (continued.empty()) continued_from = number;
    if (!line.empty() && line.back() == '\\') {
      StrAppend(&continued, line.substr(0, line.size() - 1), " ");
      continue;
    }
    std::string whole = StrCat(continued, line);
    continued.clear();
    const Origin origin{std::string(path), continued_from};
    std::string_view entry = Strip(whole);
    if (entry.empty()) continue;
    if (entry.front() == '[') {
      if (entry.back() != ']') return Invalid(origin, "a section header without its ']'");
      section = std::string(entry.substr(1, entry.size() - 2));
      continue;
    }
    const size_t equals = entry.find('=');
    if (equals == std::string_view::npos) {
      return Invalid(origin, StrCat("\"", entry, "\" is no Key=Value setting"));
    }
    lines.push_back(UnitLine{section,
                             std::string(Strip(entry.substr(0, equals))),
                             std::string(Strip(entry.substr(equals + 1))),
                             origin});
  }
  return lines;
}

absl::StatusOr<std::string> ResolveSpecifiers(std::string_view value, const Specifiers& specifiers,
                                              const Origin& origin) {
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '%') {
      out.push_back(value[i]);
      continue;
    }
    if (i + 1 == value.size()) return Invalid(origin, "a '%' at the end of the value");
    const char specifier = value[++i];
    switch (specifier) {
      case '%':
        out.push_back('%');
        break;
      case 'H':
      case 'l':
        if (specifiers.host_name.empty()) {
          return Invalid(origin, StrCat("the specifier %", specifier,
                                        " stands for the host name, which is unknown here"));
        }
        out += specifier == 'H' ? specifiers.host_name
                                : specifiers.host_name.substr(0, specifiers.host_name.find('.'));
        break;
      case 'n':
        out += specifiers.unit_name;
        break;
      case 'N':
      case 'p':
        out += specifiers.unit_name.substr(0, specifiers.unit_name.rfind('.'));
        break;
      default:
        return Invalid(origin, StrCat("the specifier %", specifier,
                                      " (handoff resolves %%, %H, %l, %n, %N and %p only)"));
    }
  }
  return out;
}

// Splits `text` into words as systemd's extract_first_word does with EXTRACT_UNQUOTE: white
// space separates words; '…' and "…" group, anywhere in a word, and are removed; a backslash
// keeps the next character. With `c_escapes` (EXTRACT_CUNESCAPE, an ExecStart= line), a
// backslash starts a C escape instead. With `relax`, a quote left open at the end is closed.
absl::StatusOr<std::vector<ValueWord>> SplitWordSpans(std::string_view text, bool c_escapes,
                                                      bool relax, const Origin& origin) {
  std::vector<ValueWord> words;
  std::optional<ValueWord> word;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      if (word) words.push_back(std::move(*word));
      word.reset();
      continue;
    }
    if (!word) word.emplace(ValueWord{"", i, i});
    word->end = i + 1;
    if (quote == 0 && (c == '\'' || c == '"')) {
      quote = c;
    } else if (c == quote) {
      quote = 0;
    } else if (c == '\\') {
      if (i + 1 == text.size()) {
        if (relax) break;
        return Invalid(origin, "a backslash at the end of the value");
      }
      const char next = text[++i];
      word->end = i + 1;
      if (!c_escapes) {
        word->text.push_back(next);
        continue;
      }
      switch (next) {
        case '\\':
        case '"':
        case '\'':
          word->text.push_back(next);
          break;
        case 's':
          word->text.push_back(' ');
          break;
        case 't':
          word->text.push_back('\t');
          break;
        case 'n':
          word->text.push_back('\n');
          break;
        default:
          return Invalid(origin, StrCat("the escape \\", next,
                                        " (handoff reads \\\\ \\\" \\' \\s \\t \\n only)"));
      }
    } else {
      word->text.push_back(c);
    }
  }
  if (quote != 0 && !relax) return Invalid(origin, StrCat("a ", quote, " left open"));
  if (word) words.push_back(std::move(*word));
  return words;
}

absl::StatusOr<std::vector<std::string>> SplitWords(std::string_view text, bool c_escapes,
                                                    bool relax, const Origin& origin) {
  absl::StatusOr<std::vector<ValueWord>> spans = SplitWordSpans(text, c_escapes, relax, origin);
  if (!spans.ok()) return spans.status();
  std::vector<std::string> words;
  for (ValueWord& span : *spans) words.push_back(std::move(span.text));
  return words;
}

// Environment= words: each KEY=VALUE with a valid name; systemd drops the others.
void AddEnvironment(const std::vector<std::string>& words, const Origin& origin,
                    std::vector<EnvironmentSetting>& environment) {
  for (const std::string& word : words) {
    const size_t equals = word.find('=');
    if (equals == std::string::npos || !IsEnvironmentName(word.substr(0, equals))) continue;
    environment.push_back(EnvironmentSetting{
        word.substr(0, equals), word.substr(equals + 1), origin});
  }
}

struct ExecStartLine {
  std::vector<std::string> argv;
  Origin origin;
};

absl::StatusOr<ExecStartLine> ParseExecStart(std::string_view value, const Origin& origin) {
  // Prefixes of the first word (systemd.service(5) "Command lines"): '-' ignores the exit
  // status, '@' passes the second word as argv[0], ':' '+' '!' change how it is run.
  bool argv0_given = false;
  size_t start = 0;
  while (start < value.size() && std::string_view("-@:+!").find(value[start]) !=
                                     std::string_view::npos) {
    argv0_given = argv0_given || value[start] == '@';
    ++start;
  }
  absl::StatusOr<std::vector<std::string>> words =
      SplitWords(value.substr(start), /*c_escapes=*/true, /*relax=*/false, origin);
  if (!words.ok()) return words.status();
  if (argv0_given && words->size() >= 2) words->erase(words->begin() + 1);
  if (words->empty()) return Invalid(origin, "ExecStart= names no program");
  return ExecStartLine{std::move(*words), origin};
}

}  // namespace

std::vector<ValueWord> SplitVariableValue(std::string_view value) {
  // Relaxed, without C escapes: this cannot fail.
  return *SplitWordSpans(value, /*c_escapes=*/false, /*relax=*/true, Origin{});
}

std::string Describe(const Origin& origin) {
  return origin.line > 0 ? StrCat(origin.file, " line ", origin.line) : origin.file;
}

absl::StatusOr<ServiceCommand> MergeServiceCommand(const std::vector<UnitFileText>& files,
                                                   const Specifiers& specifiers) {
  if (files.empty()) return absl::InvalidArgumentError("no unit file to read");
  ServiceCommand command;
  command.fragment = files.front().path;
  std::vector<ExecStartLine> exec_starts;
  for (size_t f = 0; f < files.size(); ++f) {
    if (f > 0) command.drop_ins.push_back(files[f].path);
    absl::StatusOr<std::vector<UnitLine>> lines = ParseUnitLines(files[f].text, files[f].path);
    if (!lines.ok()) return lines.status();
    for (const UnitLine& line : *lines) {
      if (line.section != "Service") continue;
      if (line.key == "UnsetEnvironment" || line.key == "PassEnvironment") {
        return Invalid(line.origin, StrCat(line.key, "= makes the service's environment depend on "
                                           "the manager's; handoff cannot tell what it holds"));
      }
      if (line.key != "Environment" && line.key != "EnvironmentFile" && line.key != "ExecStart") {
        continue;
      }
      if (line.value.empty()) {
        if (line.key == "Environment") command.environment.clear();
        if (line.key == "EnvironmentFile") command.environment_files.clear();
        if (line.key == "ExecStart") exec_starts.clear();
        continue;
      }
      absl::StatusOr<std::string> value = ResolveSpecifiers(line.value, specifiers, line.origin);
      if (!value.ok()) return value.status();
      if (line.key == "Environment") {
        absl::StatusOr<std::vector<std::string>> words =
            SplitWords(*value, /*c_escapes=*/true, /*relax=*/false, line.origin);
        if (!words.ok()) return words.status();
        AddEnvironment(*words, line.origin, command.environment);
      } else if (line.key == "EnvironmentFile") {
        const bool optional = value->front() == '-';
        std::string path = optional ? value->substr(1) : *value;
        // systemd ignores a relative path with a warning.
        if (path.empty() || path.front() != '/') continue;
        command.environment_files.push_back(
            EnvironmentFileSetting{std::move(path), optional,
                                   line.origin});
      } else {
        absl::StatusOr<ExecStartLine> exec = ParseExecStart(*value, line.origin);
        if (!exec.ok()) return exec.status();
        exec_starts.push_back(std::move(*exec));
      }
    }
  }
  if (exec_starts.empty()) {
    return absl::FailedPreconditionError(
        StrCat(command.fragment, ": no ExecStart= is left once its drop-ins are applied"));
  }
  if (exec_starts.size() > 1) {
    return Invalid(exec_starts[1].origin,
                   StrCat("a second ExecStart= (the first is at ",
                          Describe(exec_starts[0].origin),
                          "): systemd refuses a service with more than one unless it is "
                          "Type=oneshot; a drop-in resets it with an empty ExecStart= first"));
  }
  command.exec_start = std::move(exec_starts.front().argv);
  command.exec_start_origin = std::move(exec_starts.front().origin);
  return command;
}

const std::vector<std::string>& SystemUnitDirectories() {
  static const std::vector<std::string>* const directories = new std::vector<std::string>{
      "/etc/systemd/system",           "/etc/systemd/system.attached",
      "/run/systemd/system",           "/run/systemd/system.attached",
      "/usr/local/lib/systemd/system", "/lib/systemd/system",
      "/usr/lib/systemd/system",
  };
  return *directories;
}

absl::StatusOr<std::vector<UnitFileText>> FindUnitFiles(const FileSystem& fs,
                                                        std::string_view unit) {
  std::vector<UnitFileText> files;
  for (const std::string& directory : SystemUnitDirectories()) {
    const std::string path = StrCat(directory, "/", unit);
    absl::StatusOr<FileInfo> info = fs.Stat(path);
    if (absl::IsNotFound(info.status())) continue;
    if (!info.ok()) return info.status();
    if (info->type == FileType::kCharacterDevice) {
      return absl::FailedPreconditionError(StrCat(path, " is masked (a link to /dev/null)"));
    }
    absl::StatusOr<std::string> text = fs.ReadFile(path, kUnitFileRead);
    if (!text.ok()) return text.status();
    if (Strip(*text).empty()) {
      return absl::FailedPreconditionError(StrCat(path, " is empty, so systemd takes ", unit,
                                                  " as masked"));
    }
    files.push_back(UnitFileText{path, std::move(*text)});
    break;
  }
  if (files.empty()) {
    return absl::NotFoundError(StrCat("no ", unit, " in ",
                                      StrJoin(SystemUnitDirectories(), ", ")));
  }
  const std::string type = std::string(unit.substr(unit.rfind('.') + 1));
  // Of each drop-in name, the first found: "<unit>.d" before "<type>.d", and within each, the
  // directories in priority order (measured with systemd-analyze verify, v252).
  std::map<std::string, std::string> drop_ins;  // name → path, sorted by name
  for (const std::string& dir_name : {StrCat(unit, ".d"), StrCat(type, ".d")}) {
    for (const std::string& directory : SystemUnitDirectories()) {
      const std::string dir = StrCat(directory, "/", dir_name);
      absl::StatusOr<std::vector<std::string>> names = fs.ListDirectory(dir);
      if (absl::IsNotFound(names.status())) continue;
      if (!names.ok()) return names.status();
      for (const std::string& name : *names) {
        if (name.size() <= 5 || name.substr(name.size() - 5) != ".conf") continue;
        drop_ins.emplace(name, StrCat(dir, "/", name));
      }
    }
  }
  for (const auto& [name, path] : drop_ins) {
    absl::StatusOr<FileInfo> info = fs.Stat(path);
    if (!info.ok()) return info.status();
    if (info->type == FileType::kCharacterDevice) continue;  // masked
    if (info->type != FileType::kRegular) continue;
    absl::StatusOr<std::string> text = fs.ReadFile(path, kUnitFileRead);
    if (!text.ok()) return text.status();
    files.push_back(UnitFileText{path, std::move(*text)});
  }
  return files;
}

absl::StatusOr<std::map<std::string, std::string>> ReadEnvironmentFiles(
    const FileSystem& fs, const ServiceCommand& command) {
  std::map<std::string, std::string> texts;
  for (const EnvironmentFileSetting& setting : command.environment_files) {
    absl::StatusOr<std::string> text = fs.ReadFile(setting.path, kEnvironmentFileRead);
    if (absl::IsNotFound(text.status())) continue;
    if (!text.ok()) return text.status();
    texts[setting.path] = std::move(*text);
  }
  return texts;
}

absl::StatusOr<ServiceEnvironment> BuildEnvironment(
    const ServiceCommand& command, const std::map<std::string, std::string>& files) {
  ServiceEnvironment environment;
  for (const EnvironmentSetting& setting : command.environment) {
    environment.variables[setting.key] = setting;
  }
  for (const EnvironmentFileSetting& setting : command.environment_files) {
    if (setting.path.find_first_of("*?[") != std::string::npos) {
      return Invalid(setting.origin,
                     StrCat("EnvironmentFile=", setting.path,
                            " is a wildcard; handoff reads named environment files only"));
    }
    auto text = files.find(setting.path);
    if (text == files.end()) {
      if (setting.optional) continue;
      return absl::FailedPreconditionError(
          StrCat(setting.path, " does not exist, and ", Describe(setting.origin),
                 " needs it (no '-' before the path): systemd would not start the service"));
    }
    absl::StatusOr<EnvironmentFile> parsed = ParseEnvironmentFile(text->second, setting.path);
    if (!parsed.ok()) return parsed.status();
    for (const EnvironmentAssignment& assignment : parsed->assignments) {
      environment.variables[assignment.key] =
          EnvironmentSetting{assignment.key,
                             assignment.value,
                             Origin{setting.path, assignment.line}};
    }
    for (IgnoredAssignment& ignored : parsed->ignored) {
      environment.ignored.push_back(std::move(ignored));
    }
  }
  return environment;
}

absl::StatusOr<ExpandedCommand> ExpandCommand(const ServiceCommand& command,
                                              const ServiceEnvironment& environment) {
  ExpandedCommand expanded;
  const auto lookup = [&](const std::string& name) -> const EnvironmentSetting* {
    auto it = environment.variables.find(name);
    return it == environment.variables.end() ? nullptr : &it->second;
  };
  for (const std::string& word : command.exec_start) {
    if (word.size() > 1 && word[0] == '$' && word[1] != '{' && word[1] != '$') {
      const std::string name = word.substr(1);
      const EnvironmentSetting* setting = lookup(name);
      if (setting == nullptr) {
        expanded.unset_variables.push_back(name);
        continue;
      }
      std::vector<ValueWord> pieces = SplitVariableValue(setting->value);
      for (size_t p = 0; p < pieces.size(); ++p) {
        expanded.argv.push_back(CommandWord{std::move(pieces[p].text),
                                            name,
                                            setting->origin,
                                            static_cast<int>(p)});
      }
      continue;
    }
    CommandWord out{"", "", command.exec_start_origin};
    for (size_t i = 0; i < word.size(); ++i) {
      if (word[i] != '$' || i + 1 == word.size()) {
        out.text.push_back(word[i]);
      } else if (word[i + 1] == '$') {
        out.text.push_back('$');
        ++i;
      } else if (word[i + 1] == '{' && word.find('}', i + 2) != std::string::npos) {
        const size_t close = word.find('}', i + 2);
        const std::string name = word.substr(i + 2, close - i - 2);
        if (const EnvironmentSetting* setting = lookup(name)) {
          out.text += setting->value;
          out.variable = name;
          out.origin = setting->origin;
        } else {
          expanded.unset_variables.push_back(name);
        }
        i = close;
      } else {
        out.text.push_back('$');
      }
    }
    expanded.argv.push_back(std::move(out));
  }
  return expanded;
}

}  // namespace handoff::systemd
