#include "hotplug/replay/manifest.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_join.h"
#include "absl/strings/ascii.h"
#include "hotplug/replay/line_format.h"

namespace hotring::hotplug::replay {
namespace {

constexpr absl::string_view kRuleShellPrefix = "cd '";

// The daemon runs a rule's command as `/bin/sh -c "cd 'DEVROOT' || exit 126\nTEXT"`: the
// manifest shows the rule's TEXT only (the dev root is the replay's and says nothing).
std::vector<std::string> ShownArgv(const CommandRun& run) {
  if (run.kind == "rule" && run.argv.size() == 3 && run.argv[1] == "-c" &&
      absl::StartsWith(run.argv[2], kRuleShellPrefix)) {
    const size_t newline = run.argv[2].find('\n');
    if (newline != std::string::npos) return {run.argv[2].substr(newline + 1)};
  }
  return run.argv;
}

std::string SeqnumOf(const CommandRun& run) {
  for (const std::string& e : run.env) {
    if (absl::StartsWith(e, "SEQNUM=")) return e.substr(7);
  }
  return "-";
}

}  // namespace

std::string FormatManifest(const Manifest& manifest, absl::string_view work_dir) {
  auto clean = [&](absl::string_view s) {
    std::string out(s);
    if (!work_dir.empty()) out = absl::StrReplaceAll(out, {{work_dir, "<work>"}});
    return QuoteField(out);
  };
  std::string out = absl::StrCat(kManifestHeader, "\n");
  std::vector<const DevEntry*> dev;
  for (const DevEntry& e : manifest.dev) dev.push_back(&e);
  std::sort(dev.begin(), dev.end(),
            [](const DevEntry* a, const DevEntry* b) { return a->path < b->path; });
  out += "# the dev root, by path: dir|file PATH UID:GID MODE, node PATH char|block MAJ:MIN "
         "UID:GID MODE, link PATH TARGET\n";
  for (const DevEntry* e : dev) {
    const std::string owner = absl::StrCat(e->uid, ":", e->gid);
    const std::string mode = absl::StrFormat("%04o", e->mode);
    switch (e->type) {
      case DevEntry::Type::kDir:
        absl::StrAppend(&out, "dir ", clean(e->path), " ", owner, " ", mode, "\n");
        break;
      case DevEntry::Type::kFile:
        absl::StrAppend(&out, "file ", clean(e->path), " ", owner, " ", mode, "\n");
        break;
      case DevEntry::Type::kChar:
      case DevEntry::Type::kBlock:
        absl::StrAppend(&out, "node ", clean(e->path), " ",
                        e->type == DevEntry::Type::kChar ? "char " : "block ", e->major, ":",
                        e->minor, " ", owner, " ", mode, "\n");
        break;
      case DevEntry::Type::kLink:
        absl::StrAppend(&out, "link ", clean(e->path), " ", clean(e->target), "\n");
        break;
      case DevEntry::Type::kOther:
        absl::StrAppend(&out, "other ", clean(e->path), " ", owner, " ", mode, "\n");
        break;
    }
  }
  out += "# modules, in load order\n";
  for (const std::string& m : manifest.modules) absl::StrAppend(&out, m, "\n");
  out += "# commands, in the order they ran: run SEQNUM KIND ARGV..., its environment, its end\n";
  std::vector<const CommandRun*> runs;
  for (const CommandRun& r : manifest.runs) runs.push_back(&r);
  std::stable_sort(runs.begin(), runs.end(), [](const CommandRun* a, const CommandRun* b) {
    return std::tie(a->order, a->kind, a->argv) < std::tie(b->order, b->kind, b->argv);
  });
  for (const CommandRun* r : runs) {
    absl::StrAppend(&out, "run ", SeqnumOf(*r), " ", r->kind);
    for (const std::string& a : ShownArgv(*r)) absl::StrAppend(&out, " ", clean(a));
    out += "\n";
    std::vector<std::string> env = r->env;
    std::sort(env.begin(), env.end());
    for (const std::string& e : env) absl::StrAppend(&out, "  env ", clean(e), "\n");
    absl::StrAppend(&out, "  ", r->status, "\n");
  }
  // Only when there were any: a manifest of a board without them reads as before.
  if (!manifest.firmware.empty()) {
    out += "# firmware requests, in event order: firmware NAME found|missing|failed|unanswered\n";
    for (const auto& [name, outcome] : manifest.firmware) {
      absl::StrAppend(&out, "firmware ", clean(name), " ", outcome, "\n");
    }
  }
  if (!manifest.problems.empty()) {
    out += "# problems\n";
    std::vector<std::string> problems = manifest.problems;
    std::sort(problems.begin(), problems.end());
    for (const std::string& p : problems) absl::StrAppend(&out, "problem ", clean(p), "\n");
  }
  return out;
}

absl::StatusOr<Manifest> ParseManifest(absl::string_view text) {
  if (text.size() > (64u << 20)) return absl::InvalidArgumentError("manifest too large");
  const std::vector<absl::string_view> lines = SplitLines(text);
  if (lines.empty() || lines[0] != kManifestHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("1: not a manifest (the first line must be '", kManifestHeader, "')"));
  }
  Manifest m;
  CommandRun* run = nullptr;
  for (size_t n = 1; n < lines.size(); ++n) {
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(n + 1, ": ", what));
    };
    const absl::string_view line = lines[n];
    if (line.empty() || line[0] == '#') continue;
    if (line.size() > kMaxLineBytes) return error("line too long");
    absl::StatusOr<std::vector<std::string>> split = SplitFields(line, 1000);
    if (!split.ok()) return error(split.status().message());
    std::vector<std::string>& f = *split;
    const bool indented = line[0] == ' ';
    if (indented) {
      if (run == nullptr) return error("an indented line outside a run");
      if (f[0] == "env" && f.size() == 2) {
        run->env.push_back(std::move(f[1]));
      } else if ((f[0] == "exit" || f[0] == "signal") && f.size() == 2) {
        run->status = absl::StrCat(f[0], " ", f[1]);
      } else if (f[0] == "not" && f.size() >= 2) {
        run->status = std::string(absl::StripLeadingAsciiWhitespace(line));
      } else {
        return error(absl::StrCat("unknown run line ", QuoteField(f[0])));
      }
      continue;
    }
    run = nullptr;
    const std::string& kw = f[0];
    auto owner_mode = [&](DevEntry& e, const std::string& owner,
                          const std::string& mode) -> absl::Status {
      const size_t colon = owner.find(':');
      if (colon == std::string::npos || !absl::SimpleAtoi(owner.substr(0, colon), &e.uid) ||
          !absl::SimpleAtoi(owner.substr(colon + 1), &e.gid)) {
        return error("owner must be UID:GID");
      }
      char* end = nullptr;
      const unsigned long v = std::strtoul(mode.c_str(), &end, 8);
      if (mode.empty() || *end != '\0' || v > 07777) return error("mode must be octal");
      e.mode = static_cast<uint32_t>(v);
      return absl::OkStatus();
    };
    if ((kw == "dir" || kw == "file" || kw == "other") && f.size() == 4) {
      DevEntry e;
      e.path = f[1];
      e.type = kw == "dir" ? DevEntry::Type::kDir
               : kw == "file" ? DevEntry::Type::kFile
                              : DevEntry::Type::kOther;
      if (absl::Status s = owner_mode(e, f[2], f[3]); !s.ok()) return s;
      m.dev.push_back(std::move(e));
    } else if (kw == "node" && f.size() == 6) {
      DevEntry e;
      e.path = f[1];
      if (f[2] != "char" && f[2] != "block") return error("node type must be char or block");
      e.type = f[2] == "char" ? DevEntry::Type::kChar : DevEntry::Type::kBlock;
      const size_t colon = f[3].find(':');
      if (colon == std::string::npos || !absl::SimpleAtoi(f[3].substr(0, colon), &e.major) ||
          !absl::SimpleAtoi(f[3].substr(colon + 1), &e.minor)) {
        return error("device number must be MAJOR:MINOR");
      }
      if (absl::Status s = owner_mode(e, f[4], f[5]); !s.ok()) return s;
      m.dev.push_back(std::move(e));
    } else if (kw == "link" && f.size() == 3) {
      m.dev.push_back({.path = f[1], .type = DevEntry::Type::kLink, .target = f[2]});
    } else if (kw == "module" || kw == "install") {
      m.modules.push_back(std::string(line));
    } else if (kw == "run" && f.size() >= 3) {
      CommandRun r;
      r.order = m.runs.size();
      r.kind = f[2];
      r.argv.assign(f.begin() + 3, f.end());
      // The SEQNUM is in the environment too; keep it where FormatManifest reads it from.
      m.runs.push_back(std::move(r));
      run = &m.runs.back();
    } else if (kw == "firmware" && f.size() == 3) {
      m.firmware.emplace_back(std::move(f[1]), std::move(f[2]));
    } else if (kw == "problem" && f.size() == 2) {
      m.problems.push_back(std::move(f[1]));
    } else {
      return error(absl::StrCat("unknown line ", QuoteField(kw)));
    }
  }
  return m;
}

absl::StatusOr<std::vector<std::string>> ModulesFromDryRunLog(absl::string_view log,
                                                              absl::string_view modules_root) {
  std::vector<std::string> out;
  const std::vector<absl::string_view> lines = SplitLines(log);
  for (size_t n = 0; n < lines.size(); ++n) {
    const absl::string_view line = lines[n];
    if (line.empty()) continue;
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(n + 1, ": ", what));
    };
    const size_t first = line.find(' ');
    if (first == absl::string_view::npos) return error("no module name");
    const absl::string_view verb = line.substr(0, first);
    absl::string_view rest = line.substr(first + 1);
    const size_t second = rest.find(' ');
    const absl::string_view name = rest.substr(0, second);
    rest = second == absl::string_view::npos ? absl::string_view() : rest.substr(second + 1);
    if (name.empty()) return error("no module name");
    if (verb == "load") {
      const size_t third = rest.find(' ');
      absl::string_view path = rest.substr(0, third);
      const absl::string_view options = absl::StripAsciiWhitespace(
          third == absl::string_view::npos ? absl::string_view() : rest.substr(third + 1));
      if (path.empty()) return error("load without a path");
      if (!modules_root.empty() && absl::StartsWith(path, modules_root)) {
        path.remove_prefix(modules_root.size());
      }
      while (absl::StartsWith(path, "/")) path.remove_prefix(1);
      out.push_back(absl::StrCat("module ", QuoteField(name), " ", QuoteField(path),
                                 options.empty() ? "" : " ", options.empty() ? "" : QuoteField(options)));
    } else if (verb == "install") {
      out.push_back(absl::StrCat("install ", QuoteField(name), " ", QuoteField(rest)));
    } else {
      return error(absl::StrCat("unknown line ", QuoteField(line)));
    }
  }
  return out;
}

std::string FormatRunRecord(const CommandRun& run) {
  std::string out = absl::StrCat("kind ", QuoteField(run.kind), "\norder ", run.order, "\n");
  for (const std::string& a : run.argv) absl::StrAppend(&out, "arg ", QuoteField(a), "\n");
  for (const std::string& e : run.env) absl::StrAppend(&out, "env ", QuoteField(e), "\n");
  absl::StrAppend(&out, "status ", QuoteField(run.status), "\n");
  return out;
}

absl::StatusOr<CommandRun> ParseRunRecord(absl::string_view text) {
  CommandRun run;
  bool have_status = false;
  const std::vector<absl::string_view> lines = SplitLines(text);
  if (lines.size() > 10'000) return absl::InvalidArgumentError("run record too long");
  for (size_t n = 0; n < lines.size(); ++n) {
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(n + 1, ": ", what));
    };
    if (lines[n].empty()) continue;
    if (lines[n].size() > kMaxLineBytes) return error("line too long");
    absl::StatusOr<std::vector<std::string>> f = SplitFields(lines[n], 2);
    if (!f.ok()) return error(f.status().message());
    if (f->size() != 2) return error("want KEYWORD VALUE");
    const std::string& key = (*f)[0];
    std::string& value = (*f)[1];
    if (key == "kind") {
      run.kind = std::move(value);
    } else if (key == "order") {
      if (!absl::SimpleAtoi(value, &run.order)) return error("order is not a number");
    } else if (key == "arg") {
      run.argv.push_back(std::move(value));
    } else if (key == "env") {
      run.env.push_back(std::move(value));
    } else if (key == "status") {
      run.status = std::move(value);
      have_status = true;
    } else {
      return error(absl::StrCat("unknown keyword ", QuoteField(key)));
    }
  }
  if (run.kind.empty()) return absl::InvalidArgumentError("run record without kind");
  if (!have_status) return absl::InvalidArgumentError("run record without status");
  return run;
}

}  // namespace hotring::hotplug::replay
