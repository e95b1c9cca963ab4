#include "agent/kubelet/kubelet_command_line.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "common/base/strings.h"
#include "common/systemd/environment_file.h"

namespace handoff {
namespace {

using systemd::CommandWord;
using systemd::Describe;

// The boolean flags `kubelet --help` lists, v1.26.13 and v1.27.16 (pflag prints no type after a
// boolean's name; seccomp-default shows `RuntimeDefault`, quoted in its usage, in its place).
constexpr std::string_view kKubeletBooleanFlags[] = {
    "anonymous-auth",
    "authentication-token-webhook",
    "cgroups-per-qos",
    "contention-profiling",
    "cpu-cfs-quota",
    "enable-controller-attach-detach",
    "enable-debugging-handlers",
    "enable-load-reader",
    "enable-server",
    "exit-on-lock-contention",
    "experimental-allocatable-ignore-eviction",
    "fail-swap-on",
    "help",
    "keep-terminated-pod-volumes",
    "kernel-memcg-notification",
    "local-storage-capacity-isolation",
    "log-cadvisor-usage",
    "log-json-split-stream",
    "make-iptables-util-chains",
    "protect-kernel-defaults",
    "register-node",
    "register-schedulable",
    "rotate-certificates",
    "rotate-server-certificates",
    "runonce",
    "seccomp-default",
    "serialize-image-pulls",
    "storage-driver-secure",
};

// Flags whose value is optional (pflag's NoOptDefVal): bare, they take their default and never
// the next word.
bool TakesNoNextWord(std::string_view name) {
  return IsKubeletBooleanFlag(name) || name == "version";
}

absl::Status Invalid(const CommandWord& word, std::string_view what) {
  return absl::InvalidArgumentError(
      StrCat(Describe(word.origin), word.variable.empty() ? "" : StrCat(" (", word.variable, ")"),
             ": ", what));
}

}  // namespace

bool IsKubeletBooleanFlag(std::string_view name) {
  return std::find(std::begin(kKubeletBooleanFlags), std::end(kKubeletBooleanFlags), name) !=
         std::end(kKubeletBooleanFlags);
}

const KubeletFlag* KubeletCommandLine::Effective(std::string_view name) const {
  for (auto it = flags.rbegin(); it != flags.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

std::vector<const KubeletFlag*> KubeletCommandLine::All(std::string_view name) const {
  std::vector<const KubeletFlag*> all;
  for (const KubeletFlag& flag : flags) {
    if (flag.name == name) all.push_back(&flag);
  }
  return all;
}

absl::StatusOr<KubeletCommandLine> ParseKubeletCommandLine(const std::vector<CommandWord>& argv) {
  KubeletCommandLine line;
  if (argv.empty()) return absl::InvalidArgumentError("the kubelet's command line is empty");
  line.program = argv.front().text;
  for (size_t i = 1; i < argv.size(); ++i) {
    const CommandWord& word = argv[i];
    std::string_view text = word.text;
    if (text == "--") break;  // pflag: the rest are arguments, which the kubelet ignores
    if (text.size() < 2 || text.front() != '-') {
      return Invalid(word, StrCat("\"", text, "\" is no flag (the kubelet takes no arguments: "
                                  "a value meant for the flag before it needs that flag's '=')"));
    }
    text.remove_prefix(text[1] == '-' ? 2 : 1);
    KubeletFlag flag{"", std::nullopt, word};
    const size_t equals = text.find('=');
    flag.name = std::string(text.substr(0, equals));
    if (flag.name.empty()) return Invalid(word, StrCat("\"", word.text, "\" names no flag"));
    if (equals != std::string_view::npos) {
      flag.value = std::string(text.substr(equals + 1));
    } else if (!TakesNoNextWord(flag.name)) {
      if (i + 1 == argv.size()) {
        return Invalid(word, StrCat("--", flag.name, " is last and has no value: the kubelet "
                                    "exits \"flag needs an argument\""));
      }
      flag.value = argv[++i].text;
    }
    line.flags.push_back(std::move(flag));
  }
  return line;
}

absl::StatusOr<EffectiveKubelet> ReadEffectiveKubelet(const KubeletUnit& unit) {
  absl::StatusOr<systemd::ServiceCommand> command =
      systemd::MergeServiceCommand(unit.unit_files, unit.specifiers);
  if (!command.ok()) return command.status();
  absl::StatusOr<systemd::ServiceEnvironment> environment =
      systemd::BuildEnvironment(*command, unit.environment);
  if (!environment.ok()) return environment.status();
  absl::StatusOr<systemd::ExpandedCommand> expanded =
      systemd::ExpandCommand(*command, *environment);
  if (!expanded.ok()) return expanded.status();
  // A variable the command line uses that a file meant to set, on a line systemd ignores.
  for (const std::string& unset : expanded->unset_variables) {
    for (const systemd::IgnoredAssignment& ignored : environment->ignored) {
      if (ignored.key == unset || EndsWith(ignored.key, StrCat(" ", unset))) {
        return absl::FailedPreconditionError(
            StrCat(ignored.message, "; the kubelet's command line uses $", unset,
                   ", so what that line says never reaches the kubelet: write it KEY=VALUE"));
      }
    }
  }
  absl::StatusOr<KubeletCommandLine> flags = ParseKubeletCommandLine(expanded->argv);
  if (!flags.ok()) return flags.status();
  std::vector<std::string> argv;
  for (const systemd::CommandWord& word : expanded->argv) argv.push_back(word.text);
  return EffectiveKubelet{std::move(*command), std::move(*environment), std::move(*flags),
                          std::move(argv)};
}

std::string DescribeFlag(const KubeletFlag& flag) {
  std::string where = Describe(flag.word.origin);
  if (!flag.word.variable.empty()) where = StrCat(flag.word.variable, ", ", where);
  return StrCat("--", flag.name, flag.value ? StrCat("=", *flag.value) : "", " (", where, ")");
}

namespace {

// Writes a word of a variable's value so that SplitVariableValue reads it back unchanged.
std::string QuoteWord(std::string_view text) {
  if (!text.empty() && text.find_first_of(" \t\r\n'\"\\") == std::string_view::npos) {
    return std::string(text);
  }
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') quoted.push_back('\\');
    quoted.push_back(c);
  }
  quoted.push_back('\'');
  return quoted;
}

// One change to a variable's value: the bytes [begin, end) become `text`.
struct ValueEdit {
  size_t begin;
  size_t end;
  std::string text;
};

struct VariableKey {
  std::string file;
  int line;
  std::string variable;
  bool operator<(const VariableKey& other) const {
    return std::tie(file, line, variable) < std::tie(other.file, other.line, other.variable);
  }
};

std::string ApplyEdits(std::string value, std::vector<ValueEdit> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const ValueEdit& a, const ValueEdit& b) { return a.begin > b.begin; });
  for (const ValueEdit& edit : edits) {
    size_t begin = edit.begin;
    size_t end = edit.end;
    if (edit.text.empty()) {
      // A removed word takes the white space before it (or after it, when first) along.
      while (begin > 0 && (value[begin - 1] == ' ' || value[begin - 1] == '\t')) --begin;
      if (begin == 0) {
        while (end < value.size() && (value[end] == ' ' || value[end] == '\t')) ++end;
      }
    }
    value.replace(begin, end - begin, edit.text);
  }
  return value;
}

absl::StatusOr<std::string> RewriteAssignment(const std::string& text, const VariableKey& key,
                                              const std::string& value) {
  absl::StatusOr<systemd::EnvironmentFile> parsed = systemd::ParseEnvironmentFile(text, key.file);
  if (!parsed.ok()) return parsed.status();
  for (const systemd::EnvironmentAssignment& assignment : parsed->assignments) {
    if (assignment.key == key.variable && assignment.line == key.line) {
      return systemd::ReplaceAssignment(text, assignment, value);
    }
  }
  return absl::InternalError(
      StrCat(key.file, " line ", key.line, " no longer assigns ", key.variable));
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> SetKubeletFlag(
    const KubeletUnit& unit, std::string_view name, const std::optional<std::string>& value) {
  absl::StatusOr<EffectiveKubelet> before = ReadEffectiveKubelet(unit);
  if (!before.ok()) return before.status();
  const std::string new_word =
      value ? StrCat("--", name, "=", *value) : std::string();

  std::map<VariableKey, std::vector<ValueEdit>> edits;
  std::vector<const KubeletFlag*> occurrences = before->flags.All(name);
  for (const KubeletFlag* flag : occurrences) {
    const CommandWord& word = flag->word;
    const bool from_file = !word.variable.empty() && word.piece >= 0 &&
                           unit.environment.count(word.origin.file) > 0;
    if (!from_file) {
      return absl::FailedPreconditionError(StrCat(
          DescribeFlag(*flag), " is written ",
          word.variable.empty() ? "in the unit's ExecStart line"
                                : word.piece < 0 ? StrCat("through ${", word.variable, "}")
                                                 : "in a unit file's Environment=",
          "; handoff writes the kubelet's flags in environment files only: move it into ",
          "KUBELET_EXTRA_ARGS (/etc/default/kubelet or /etc/sysconfig/kubelet)"));
    }
    const systemd::EnvironmentSetting& setting =
        before->environment.variables.at(word.variable);
    std::vector<systemd::ValueWord> pieces = systemd::SplitVariableValue(setting.value);
    const systemd::ValueWord& named = pieces.at(static_cast<size_t>(word.piece));
    size_t end = named.end;
    // "--name value" as two words: the value is the next piece when it came from the same
    // variable; across variables, refuse.
    const bool split = named.text.find('=') == std::string::npos && flag->value.has_value();
    if (split) {
      if (static_cast<size_t>(word.piece) + 1 >= pieces.size()) {
        return absl::FailedPreconditionError(
            StrCat(DescribeFlag(*flag), " takes its value from the next variable; write it ",
                   "--", name, "=value"));
      }
      end = pieces[static_cast<size_t>(word.piece) + 1].end;
    }
    edits[VariableKey{word.origin.file, word.origin.line, word.variable}].push_back(
        ValueEdit{named.begin, end, new_word.empty() ? "" : QuoteWord(new_word)});
  }

  std::map<std::string, std::string> texts;  // the files changed, by path
  auto text_of = [&](const std::string& path) -> std::string& {
    auto it = texts.find(path);
    if (it == texts.end()) it = texts.emplace(path, unit.environment.at(path)).first;
    return it->second;
  };
  for (auto& [key, value_edits] : edits) {
    // The same word reached twice ($A used twice): one edit.
    std::sort(value_edits.begin(), value_edits.end(),
              [](const ValueEdit& a, const ValueEdit& b) { return a.begin < b.begin; });
    value_edits.erase(std::unique(value_edits.begin(), value_edits.end(),
                                  [](const ValueEdit& a, const ValueEdit& b) {
                                    return a.begin == b.begin;
                                  }),
                      value_edits.end());
    const std::string old_value = before->environment.variables.at(key.variable).value;
    absl::StatusOr<std::string> rewritten =
        RewriteAssignment(text_of(key.file), key, ApplyEdits(old_value, value_edits));
    if (!rewritten.ok()) return rewritten.status();
    text_of(key.file) = std::move(*rewritten);
  }

  if (occurrences.empty() && value) {
    // Where to add it: KUBELET_KUBEADM_ARGS, else the last $VAR an environment file sets.
    std::optional<std::pair<std::string, systemd::EnvironmentSetting>> target;
    for (const std::string& word : before->command.exec_start) {
      if (word.size() < 2 || word[0] != '$' || word[1] == '{' || word[1] == '$') continue;
      auto it = before->environment.variables.find(word.substr(1));
      if (it == before->environment.variables.end() ||
          unit.environment.count(it->second.origin.file) == 0) {
        continue;
      }
      if (!target || target->first != "KUBELET_KUBEADM_ARGS") target = *it;
    }
    if (!target) {
      return absl::FailedPreconditionError(StrCat(
          "no environment file sets a variable the kubelet's command line expands (",
          Describe(before->command.exec_start_origin), "), so handoff has nowhere to add --",
          name, ": set KUBELET_EXTRA_ARGS in /etc/default/kubelet or /etc/sysconfig/kubelet"));
    }
    const auto& [variable, setting] = *target;
    const std::string joined = setting.value.empty()
                                   ? QuoteWord(new_word)
                                   : StrCat(setting.value, " ", QuoteWord(new_word));
    absl::StatusOr<std::string> rewritten =
        RewriteAssignment(text_of(setting.origin.file),
                          VariableKey{setting.origin.file, setting.origin.line, variable}, joined);
    if (!rewritten.ok()) return rewritten.status();
    text_of(setting.origin.file) = std::move(*rewritten);
  }

  // Read the result back: the kubelet must now run with exactly what was asked, and with every
  // other flag as before.
  KubeletUnit after = unit;
  for (const auto& [path, text] : texts) after.environment[path] = text;
  absl::StatusOr<EffectiveKubelet> check = ReadEffectiveKubelet(after);
  if (!check.ok()) return check.status();
  const KubeletFlag* now = check->flags.Effective(name);
  const bool as_asked = value ? now != nullptr && now->value == value : now == nullptr;
  std::vector<std::tuple<std::string, std::optional<std::string>>> others_before;
  std::vector<std::tuple<std::string, std::optional<std::string>>> others_after;
  for (const KubeletFlag& flag : before->flags.flags) {
    if (flag.name != name) others_before.emplace_back(flag.name, flag.value);
  }
  for (const KubeletFlag& flag : check->flags.flags) {
    if (flag.name != name) others_after.emplace_back(flag.name, flag.value);
  }
  if (!as_asked || others_before != others_after) {
    std::vector<std::string> paths;
    for (const auto& [path, text] : texts) paths.push_back(path);
    return absl::InternalError(StrCat("setting --", name, " in ", StrJoin(paths, ", "),
                                      " would not give the kubelet what was asked, or would "
                                      "change another flag; nothing is written"));
  }
  return texts;
}

}  // namespace handoff
