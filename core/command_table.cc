#include "core/command_table.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hotring {
namespace {

// Summaries start at this column; a longer name and synopsis puts its summary on the next line.
constexpr size_t kSummaryColumn = 25;

}  // namespace

const Command* FindCommand(absl::Span<const Command> table, absl::string_view group,
                           absl::string_view name) {
  for (const Command& command : table) {
    if (command.group != group) continue;
    for (absl::string_view alias : absl::StrSplit(command.name, '|')) {
      if (alias == name) return &command;
    }
  }
  return nullptr;
}

const Command* FindProgram(absl::Span<const Command> table, absl::string_view argv0) {
  const size_t slash = argv0.rfind('/');
  const absl::string_view base =
      argv0.substr(slash == absl::string_view::npos ? 0 : slash + 1);
  if (base.empty()) return nullptr;
  for (const Command& command : table) {
    for (absl::string_view program : absl::StrSplit(command.program_names, '|', absl::SkipEmpty())) {
      if (program == base) return &command;
    }
  }
  return nullptr;
}

std::string CommandList(absl::Span<const Command> table, absl::string_view group) {
  std::string out;
  for (const Command& command : table) {
    if (command.group != group) continue;
    const absl::string_view name = command.name.substr(0, command.name.find('|'));
    std::string head = absl::StrCat("  ", name);
    if (!command.synopsis.empty()) absl::StrAppend(&head, " ", command.synopsis);
    bool first = true;
    for (absl::string_view line : absl::StrSplit(command.summary, '\n')) {
      if (first && head.size() + 1 <= kSummaryColumn) {
        absl::StrAppend(&out, head, std::string(kSummaryColumn - head.size(), ' '), line, "\n");
      } else {
        if (first) absl::StrAppend(&out, head, "\n");
        absl::StrAppend(&out, std::string(kSummaryColumn, ' '), line, "\n");
      }
      first = false;
    }
  }
  return out;
}

}  // namespace hotring
