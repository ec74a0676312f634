#include "core/flags.h"

#include <cstdio>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace hotring {
namespace {

// Help lines: names and value up to this column, the help text after it, wrapped at the width.
constexpr size_t kHelpColumn = 29;
constexpr size_t kHelpWidth = 98;

// Appends `text` at `column`, wrapped at kHelpWidth; `out` is at `column` already.
void AppendWrapped(std::string& out, absl::string_view text, size_t column) {
  size_t at = column;
  bool first = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!first && at + 1 + word.size() > kHelpWidth) {
      absl::StrAppend(&out, "\n", std::string(column, ' '));
      at = column;
      first = true;
    }
    if (!first) {
      out += ' ';
      ++at;
    }
    absl::StrAppend(&out, word);
    at += word.size();
    first = false;
  }
}

}  // namespace

FlagSet::FlagSet(absl::string_view command, absl::string_view synopsis)
    : command_(command), synopsis_(synopsis) {}

FlagSet& FlagSet::Add(Flag flag) {
  rows_.push_back(Row{flags_.size(), ""});
  flags_.push_back(std::move(flag));
  return *this;
}

FlagSet& FlagSet::Bool(absl::string_view names, bool* dest, absl::string_view help) {
  return Store(names, dest, true, help);
}

FlagSet& FlagSet::Switch(absl::string_view names, absl::string_view help,
                         std::function<absl::Status()> action) {
  Flag flag;
  flag.names = absl::StrSplit(names, '|');
  flag.help = std::string(help);
  flag.takes = Takes::kNothing;
  flag.on_switch = std::move(action);
  return Add(std::move(flag));
}

FlagSet& FlagSet::Value(absl::string_view names, absl::string_view value_name,
                        absl::string_view help,
                        std::function<absl::Status(absl::string_view)> parse) {
  Flag flag;
  flag.names = absl::StrSplit(names, '|');
  flag.value_name = std::string(value_name);
  flag.help = std::string(help);
  flag.takes = Takes::kValue;
  flag.on_value = std::move(parse);
  return Add(std::move(flag));
}

FlagSet& FlagSet::OptionalValue(
    absl::string_view names, absl::string_view value_name, absl::string_view help,
    std::function<absl::Status(std::optional<absl::string_view>)> parse) {
  Flag flag;
  flag.names = absl::StrSplit(names, '|');
  flag.value_name = absl::StrCat("[=", value_name, "]");
  flag.help = std::string(help);
  flag.takes = Takes::kOptionalInline;
  flag.on_optional = std::move(parse);
  return Add(std::move(flag));
}

FlagSet& FlagSet::String(absl::string_view names, absl::string_view value_name,
                         std::string* dest, absl::string_view help) {
  return Value(names, value_name, help, [dest](absl::string_view v) {
    *dest = std::string(v);
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::NonEmpty(absl::string_view names, absl::string_view value_name,
                           std::string* dest, absl::string_view help) {
  return Value(names, value_name, help, [dest](absl::string_view v) {
    if (v.empty()) return absl::InvalidArgumentError("needs a non-empty value");
    *dest = std::string(v);
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::Strings(absl::string_view names, absl::string_view value_name,
                          std::vector<std::string>* dest, absl::string_view help) {
  return Value(names, value_name, help, [dest](absl::string_view v) {
    dest->emplace_back(v);
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::Double(absl::string_view names, absl::string_view value_name, double* dest,
                         absl::string_view help) {
  return Value(names, value_name, help, [dest](absl::string_view v) {
    double value;
    if (!absl::SimpleAtod(v, &value) || value != value) {
      return absl::InvalidArgumentError(absl::StrCat("needs a number, got '", v, "'"));
    }
    *dest = value;
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::Seconds(absl::string_view names, absl::string_view value_name,
                          absl::Duration* dest, absl::string_view help) {
  return Value(names, value_name, help, [dest](absl::string_view v) {
    absl::StatusOr<absl::Duration> d = ParseSeconds(v);
    if (!d.ok()) return d.status();
    *dest = *d;
    return absl::OkStatus();
  });
}

FlagSet& FlagSet::Positionals(std::vector<std::string>* dest) {
  positionals_ = dest;
  return *this;
}

FlagSet& FlagSet::Hidden() {
  if (!flags_.empty()) flags_.back().hidden = true;
  return *this;
}

FlagSet& FlagSet::AbbreviatedLongNames() {
  abbreviations_ = true;
  return *this;
}

FlagSet& FlagSet::Text(absl::string_view line) {
  rows_.push_back(Row{std::nullopt, std::string(line)});
  return *this;
}

absl::StatusOr<int64_t> FlagSet::ParseInt(absl::string_view text, int64_t min, int64_t max) {
  int64_t value;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("needs an integer, got '", text, "'"));
  }
  if (value < min || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be between ", min, " and ", max, ", got ", value));
  }
  return value;
}

absl::StatusOr<absl::Duration> FlagSet::ParseSeconds(absl::string_view text) {
  double value;
  if (!absl::SimpleAtod(text, &value) || value != value) {
    return absl::InvalidArgumentError(absl::StrCat("needs a number, got '", text, "'"));
  }
  if (value < 0 || value > 1e9) {
    return absl::InvalidArgumentError(
        absl::StrCat("needs a number of seconds >= 0, got ", text));
  }
  return absl::Seconds(value);
}

const FlagSet::Flag* FlagSet::Find(absl::string_view name) const {
  for (const Flag& flag : flags_) {
    for (const std::string& n : flag.names) {
      if (n == name) return &flag;
    }
  }
  return nullptr;
}

absl::StatusOr<const FlagSet::Flag*> FlagSet::FindAbbreviated(absl::string_view name) const {
  const Flag* found = nullptr;
  for (const Flag& flag : flags_) {
    for (const std::string& n : flag.names) {
      if (!absl::StartsWith(n, "--") || !absl::StartsWith(n, name)) continue;
      // Two names of one flag ("--property", "--properties") are no ambiguity.
      if (found != nullptr && found != &flag) {
        return Error(absl::StrCat("option '", name, "' is ambiguous"));
      }
      found = &flag;
    }
  }
  return found;
}

absl::Status FlagSet::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(command_, ": ", message));
}

absl::Status FlagSet::Apply(const Flag& flag, absl::string_view name,
                            std::optional<absl::string_view> value) const {
  absl::Status status;
  switch (flag.takes) {
    case Takes::kNothing:
      status = flag.on_switch();
      break;
    case Takes::kValue:
      status = flag.on_value(*value);
      break;
    case Takes::kOptionalInline:
      status = flag.on_optional(value);
      break;
  }
  if (status.ok()) return status;
  // "--children-max must be between 1 and 4096, got 0".
  return Error(absl::StrCat(name, " ", status.message()));
}

absl::StatusOr<FlagsParsed> FlagSet::Parse(const std::vector<std::string>& args,
                                           std::FILE* help_out) const {
  auto positional = [&](const std::string& arg) -> absl::Status {
    if (positionals_ == nullptr) {
      return Error(absl::StrCat("unexpected argument '", arg, "' (try --help)"));
    }
    positionals_->push_back(arg);
    return absl::OkStatus();
  };
  auto help = [&] {
    if (help_out != nullptr) std::fputs(Usage().c_str(), help_out);
    return FlagsParsed::kHelpShown;
  };
  bool flags_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_ended || arg.size() < 2 || arg[0] != '-') {
      if (absl::Status s = positional(arg); !s.ok()) return s;
      continue;
    }
    if (arg == "--") {
      flags_ended = true;
      continue;
    }
    if (arg[1] == '-') {
      const size_t eq = arg.find('=');
      const absl::string_view name = absl::string_view(arg).substr(0, eq);
      std::optional<absl::string_view> inline_value;
      if (eq != std::string::npos) inline_value = absl::string_view(arg).substr(eq + 1);
      const Flag* flag = Find(name);
      if (flag == nullptr && abbreviations_ && name.size() > 2) {
        absl::StatusOr<const Flag*> abbreviated = FindAbbreviated(name);
        if (!abbreviated.ok()) return abbreviated.status();
        flag = *abbreviated;
      }
      if (flag == nullptr) {
        if (name == "--help") return help();
        return Error(absl::StrCat("unknown argument '", name, "' (try --help)"));
      }
      std::optional<absl::string_view> value = inline_value;
      switch (flag->takes) {
        case Takes::kNothing:
          if (inline_value.has_value()) return Error(absl::StrCat(name, " takes no value"));
          break;
        case Takes::kValue:
          if (!value.has_value()) {
            if (i + 1 >= args.size()) return Error(absl::StrCat(name, " needs a value"));
            value = args[++i];
          }
          break;
        case Takes::kOptionalInline:
          break;
      }
      if (absl::Status s = Apply(*flag, name, value); !s.ok()) return s;
      continue;
    }
    // One or more short flags: "-s", "-sf", "-q property", "-qproperty".
    for (size_t j = 1; j < arg.size(); ++j) {
      const std::string name = absl::StrCat("-", absl::string_view(&arg[j], 1));
      const Flag* flag = Find(name);
      if (flag == nullptr) {
        if (name == "-h") return help();
        return Error(absl::StrCat("unknown argument '", j == 1 ? arg : name, "' (try --help)"));
      }
      const absl::string_view rest = absl::string_view(arg).substr(j + 1);
      if (flag->takes == Takes::kNothing) {
        if (absl::Status s = Apply(*flag, name, std::nullopt); !s.ok()) return s;
        continue;
      }
      std::optional<absl::string_view> value;
      if (!rest.empty()) {
        value = rest;
      } else if (flag->takes == Takes::kValue) {
        if (i + 1 >= args.size()) return Error(absl::StrCat(name, " needs a value"));
        value = args[++i];
      }
      if (absl::Status s = Apply(*flag, name, value); !s.ok()) return s;
      break;
    }
  }
  return FlagsParsed::kRun;
}

std::string FlagSet::Usage() const {
  std::string out = synopsis_;
  if (!out.empty() && out.back() != '\n') out += '\n';
  for (const Row& row : rows_) {
    if (!row.flag.has_value()) {
      absl::StrAppend(&out, row.text, "\n");
      continue;
    }
    const Flag& flag = flags_[*row.flag];
    if (flag.hidden) continue;
    // Long names first, then the short ones: "--daemonize, --daemon, -d".
    std::string names = absl::StrCat("  ", absl::StrJoin(flag.names, ", "));
    if (!flag.value_name.empty()) {
      absl::StrAppend(&names, flag.takes == Takes::kOptionalInline ? "" : " ", flag.value_name);
    }
    out += names;
    if (flag.help.empty()) {
      out += '\n';
      continue;
    }
    if (names.size() + 1 > kHelpColumn) {
      absl::StrAppend(&out, "\n", std::string(kHelpColumn, ' '));
    } else {
      out += std::string(kHelpColumn - names.size(), ' ');
    }
    AppendWrapped(out, flag.help, kHelpColumn);
    out += '\n';
  }
  return out;
}

std::optional<int> FlagSet::ParseForCommand(const std::vector<std::string>& args) const {
  const absl::StatusOr<FlagsParsed> parsed = Parse(args);
  if (!parsed.ok()) return ReportError(command_, parsed.status());
  if (*parsed == FlagsParsed::kHelpShown) return 0;
  return std::nullopt;
}

int ReportError(absl::string_view command, const absl::Status& status) {
  absl::string_view message = status.message();
  const std::string prefix = absl::StrCat(command, ": ");
  if (absl::StartsWith(message, prefix)) message.remove_prefix(prefix.size());
  std::fprintf(stderr, "hotring %s: %s\n", std::string(command).c_str(),
               std::string(message).c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace hotring
