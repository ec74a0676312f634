// Command-line flags, declared once in a table: each flag's names, the value it takes, where the
// value goes and its help line. The same table parses the arguments and prints `--help`, so a
// command's usage text cannot drift from what it accepts. Every parse error is InvalidArgument
// naming the command and the argument; the command turns it into exit code 2.
//
// Syntax (GNU getopt_long's, which udevadm, kmod and busybox users expect): `--name value`,
// `--name=value`, `-n value`, `-nvalue`, combined short switches (`-sf`), `--` ends the flags.
#ifndef HOTRING_CORE_FLAGS_H_
#define HOTRING_CORE_FLAGS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hotring {

// What Parse found: run the command, or --help was asked for (the usage text was printed).
enum class FlagsParsed { kRun, kHelpShown };

// The integer type an Int flag stores: T itself, or T of an optional<T>.
template <typename T>
struct IntTarget {
  using type = T;
};
template <typename T>
struct IntTarget<std::optional<T>> {
  using type = T;
};

// Owns the table of one command's flags; borrows the destinations, which must outlive Parse.
class FlagSet {
 public:
  // `command`: the name errors start with ("daemon", "bench uds"). `synopsis`: the usage
  // text's first line(s) ("usage: hotring daemon [options]").
  FlagSet(absl::string_view command, absl::string_view synopsis);
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // `names`: "--long", or "--long|-l|--alias"; the first is the canonical one (errors, help).
  // `value_name`: how help shows the value ("PATH"). `help`: one line, wrapped when printed.

  // A switch: sets *dest to true.
  FlagSet& Bool(absl::string_view names, bool* dest, absl::string_view help);
  // A switch that stores `value` in *dest: --no-netlink (false), --sync/--async (an enum).
  template <typename T>
  FlagSet& Store(absl::string_view names, T* dest, T value, absl::string_view help) {
    return Switch(names, help, [dest, value] {
      *dest = value;
      return absl::OkStatus();
    });
  }
  // A switch that runs `action` each time it is given (counting -v, setting several fields).
  FlagSet& Switch(absl::string_view names, absl::string_view help,
                  std::function<absl::Status()> action);
  FlagSet& String(absl::string_view names, absl::string_view value_name, std::string* dest,
                  absl::string_view help);
  // A string that must not be empty.
  FlagSet& NonEmpty(absl::string_view names, absl::string_view value_name, std::string* dest,
                    absl::string_view help);
  // Each time given, the value is appended.
  FlagSet& Strings(absl::string_view names, absl::string_view value_name,
                   std::vector<std::string>* dest, absl::string_view help);
  // An integer within [min, max], stored in any integer type (or an optional of one).
  template <typename T>
  FlagSet& Int(absl::string_view names, absl::string_view value_name, T* dest, int64_t min,
               int64_t max, absl::string_view help) {
    return Value(names, value_name, help, [this, dest, min, max](absl::string_view v) {
      absl::StatusOr<int64_t> n = ParseInt(v, min, max);
      if (!n.ok()) return n.status();
      *dest = static_cast<typename IntTarget<T>::type>(*n);
      return absl::OkStatus();
    });
  }
  FlagSet& Double(absl::string_view names, absl::string_view value_name, double* dest,
                  absl::string_view help);
  // A duration in seconds (fractions allowed, not negative): "5", "0.25".
  FlagSet& Seconds(absl::string_view names, absl::string_view value_name, absl::Duration* dest,
                   absl::string_view help);
  // Any value, checked and stored by `parse` (whose error message is prefixed with the flag).
  FlagSet& Value(absl::string_view names, absl::string_view value_name, absl::string_view help,
                 std::function<absl::Status(absl::string_view)> parse);
  // A flag whose value is optional and only given inline: "--wait" or "--wait=10". `parse` gets
  // nullopt for the bare flag.
  FlagSet& OptionalValue(absl::string_view names, absl::string_view value_name,
                         absl::string_view help,
                         std::function<absl::Status(std::optional<absl::string_view>)> parse);
  // Positional arguments (and everything after "--"), in order. Without this, any is an error.
  FlagSet& Positionals(std::vector<std::string>* dest);
  // The flag declared last is accepted but not listed by --help (test-only knobs).
  FlagSet& Hidden();
  // Accepts an unambiguous prefix of a long name ("--env" for "--environment"), as
  // getopt_long does: for drop-ins of programs that parse with it (udevadm).
  FlagSet& AbbreviatedLongNames();
  // A line of its own in the help, after the flags declared so far ("" for an empty line).
  FlagSet& Text(absl::string_view line);

  // Parses `args` (the command's, without its name). "--help"/"-h" (unless declared otherwise)
  // prints the usage to `help_out` (null: nowhere) and returns kHelpShown.
  [[nodiscard]] absl::StatusOr<FlagsParsed> Parse(const std::vector<std::string>& args,
                                                  std::FILE* help_out = stdout) const;
  // The usage text: the synopsis, then one line per flag (names, value, help) and the texts.
  [[nodiscard]] std::string Usage() const;

  // For a command's entry point: parses `args`; nullopt when the command is to run, else its
  // exit code: 0 once --help was printed, 2 for a bad argument (reported with ReportError).
  [[nodiscard]] std::optional<int> ParseForCommand(const std::vector<std::string>& args) const;

  // InvalidArgument "<command>: <message>".
  [[nodiscard]] absl::Status Error(absl::string_view message) const;
  [[nodiscard]] const std::string& command() const { return command_; }

  // The integer parser behind Int, for values checked elsewhere.
  [[nodiscard]] static absl::StatusOr<int64_t> ParseInt(absl::string_view text, int64_t min,
                                                        int64_t max);
  [[nodiscard]] static absl::StatusOr<absl::Duration> ParseSeconds(absl::string_view text);

 private:
  enum class Takes { kNothing, kValue, kOptionalInline };
  struct Flag {
    std::vector<std::string> names;
    std::string value_name;
    std::string help;
    Takes takes = Takes::kNothing;
    bool hidden = false;
    std::function<absl::Status()> on_switch;
    std::function<absl::Status(absl::string_view)> on_value;
    std::function<absl::Status(std::optional<absl::string_view>)> on_optional;
  };
  // A row of the help: a flag (its index) or a line of text.
  struct Row {
    std::optional<size_t> flag;
    std::string text;
  };

  FlagSet& Add(Flag flag);
  [[nodiscard]] const Flag* Find(absl::string_view name) const;
  // The flag a long name abbreviates: nullptr when none; an error when several do.
  [[nodiscard]] absl::StatusOr<const Flag*> FindAbbreviated(absl::string_view name) const;
  [[nodiscard]] absl::Status Apply(const Flag& flag, absl::string_view name,
                                   std::optional<absl::string_view> value) const;

  std::string command_;
  std::string synopsis_;
  std::vector<Flag> flags_;
  std::vector<Row> rows_;
  std::vector<std::string>* positionals_ = nullptr;
  bool abbreviations_ = false;
};

// Prints `status` on stderr as "hotring <command>: <message>" (a message that starts with
// "<command>: " already, as FlagSet's errors do, is not prefixed twice) and returns the exit
// code: 2 for InvalidArgument (bad arguments), else 1.
int ReportError(absl::string_view command, const absl::Status& status);

}  // namespace hotring

#endif  // HOTRING_CORE_FLAGS_H_
