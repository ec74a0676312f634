#include "hotplug/modules/modprobe_config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::modules {
namespace {

bool IsDelimiter(char c) { return c == ' ' || c == '\t'; }

// strtok-style tokens over one line: delimiters are space and tab; Rest() is what follows the
// one delimiter after the last token (kmod's "rest of the line", leading blanks included).
class LineTokens {
 public:
  explicit LineTokens(absl::string_view line) : line_(line) {}

  std::optional<absl::string_view> Next() {
    while (pos_ < line_.size() && IsDelimiter(line_[pos_])) ++pos_;
    if (pos_ >= line_.size()) return std::nullopt;
    const size_t start = pos_;
    while (pos_ < line_.size() && !IsDelimiter(line_[pos_])) ++pos_;
    const absl::string_view token = line_.substr(start, pos_ - start);
    if (pos_ < line_.size()) ++pos_;  // the delimiter that ended the token
    return token;
  }

  std::optional<absl::string_view> Rest() const {
    if (pos_ >= line_.size()) return std::nullopt;
    return line_.substr(pos_);
  }

 private:
  absl::string_view line_;
  size_t pos_ = 0;
};

// Physical lines joined at backslash-newline; a backslash before any other character is
// dropped (kmod's freadline_wrapped).
std::vector<std::pair<std::string, unsigned>> LogicalLines(absl::string_view text) {
  std::vector<std::pair<std::string, unsigned>> lines;
  std::string current;
  unsigned physical = 0;
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++physical;
      lines.emplace_back(std::move(current), physical);
      current.clear();
      any = false;
      continue;
    }
    any = true;
    if (c == '\\') {
      if (i + 1 >= text.size()) break;
      ++i;
      if (text[i] == '\n') {
        ++physical;
        continue;
      }
      current.push_back(text[i]);
      continue;
    }
    current.push_back(c);
  }
  if (any) lines.emplace_back(std::move(current), physical + 1);
  return lines;
}

// kmod's softdep tokenizer: whitespace-separated words, except that a single leading blank
// sticks to the first word (so " pre: x" has no "pre:" and two leading blanks do).
std::vector<absl::string_view> SoftdepWords(absl::string_view s) {
  std::vector<absl::string_view> words;
  size_t p = 0;
  bool was_space = false;
  for (size_t i = 0;; ++i) {
    const bool end = i >= s.size();
    if (!end) {
      const bool space = std::isspace(static_cast<unsigned char>(s[i])) != 0;
      if (!space) {
        was_space = false;
        continue;
      }
      if (was_space) {
        p = i + 1;
        continue;
      }
      was_space = true;
      if (p >= i) continue;
    }
    if (i > p && (!end || !was_space)) words.push_back(s.substr(p, i - p));
    p = i + 1;
    if (end) break;
  }
  return words;
}

}  // namespace

std::string Modname(absl::string_view name) {
  std::string out(name.substr(0, name.find('.')));
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

std::string ModnameOfPath(absl::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash != absl::string_view::npos) path.remove_prefix(slash + 1);
  return Modname(path);
}

bool NormaliseName(std::string* name) {
  for (size_t i = 0; i < name->size(); ++i) {
    switch ((*name)[i]) {
      case '-':
        (*name)[i] = '_';
        break;
      case ']':
        return false;
      case '[': {
        const size_t close = name->find(']', i);
        if (close == std::string::npos) return false;
        i = close;
        break;
      }
      default:
        break;
    }
  }
  return true;
}

void ModprobeConfig::ParseFile(absl::string_view text, absl::string_view filename) {
  for (auto& [line, linenum] : LogicalLines(text)) {
    if (line.empty() || line[0] == '#') continue;
    LineTokens tokens(line);
    const std::optional<absl::string_view> cmd = tokens.Next();
    if (!cmd) continue;
    bool ok = true;
    auto name = [&]() -> std::string {
      std::optional<absl::string_view> token = tokens.Next();
      std::string n(token.value_or(""));
      if (!token || !NormaliseName(&n)) ok = false;
      return n;
    };
    if (*cmd == "alias") {
      std::string pattern = name();
      std::string module = name();
      if (ok) aliases.push_back({std::move(pattern), std::move(module)});
    } else if (*cmd == "blacklist") {
      std::string module = name();
      if (ok) blacklist.push_back(std::move(module));
    } else if (*cmd == "options" || *cmd == "install" || *cmd == "remove" ||
               *cmd == "softdep") {
      std::string module = name();
      const std::optional<absl::string_view> rest = tokens.Rest();
      if (ok && rest) {
        if (*cmd == "options") {
          std::string opts(*rest);
          for (char& c : opts) {
            if (c == '\t') c = ' ';
          }
          options.push_back({std::move(module), std::move(opts)});
        } else if (*cmd == "install") {
          install.push_back({std::move(module), std::string(*rest)});
        } else if (*cmd == "remove") {
          remove.push_back({std::move(module), std::string(*rest)});
        } else {
          Softdep dep{.pattern = std::move(module)};
          std::optional<Softdep::Part> part;
          for (const absl::string_view word : SoftdepWords(*rest)) {
            if (word == "pre:") {
              part = Softdep::Part::kPre;
            } else if (word == "post:") {
              part = Softdep::Part::kPost;
            } else if (part) {
              (*part == Softdep::Part::kPre ? dep.pre : dep.post).emplace_back(word);
              dep.order.push_back(*part);
            }
          }
          softdeps.push_back(std::move(dep));
        }
      } else {
        ok = false;
      }
    } else if (*cmd == "include" || *cmd == "config") {
      errors.push_back(absl::StrCat(filename, ": command ", *cmd,
                                    " is deprecated and not parsed anymore"));
    } else {
      ok = false;
    }
    if (!ok) {
      errors.push_back(
          absl::StrCat(filename, " line ", linenum, ": ignoring bad line starting with '", *cmd, "'"));
    }
  }
}

void ModprobeConfig::ParseKernelCmdline(absl::string_view cmdline) {
  // kmod reads at most 4095 bytes of /proc/cmdline.
  const std::string s(cmdline.substr(0, 4095));
  enum class State { kIgnore, kModname, kParam, kValue };
  State state = State::kModname;
  size_t modname = 0;
  size_t modname_end = 0;
  size_t param = 0;
  size_t value = std::string::npos;
  size_t quote = std::string::npos;
  bool quoted = false;
  for (size_t p = 0; p <= s.size(); ++p) {
    const char c = p < s.size() ? s[p] : '\0';
    bool complete = false;
    switch (c) {
      case '"':
        quoted = !quoted;
        // A quote may open an option only as its first character (grub quotes whole options).
        if (quoted && state == State::kModname && p == modname) {
          quote = p;
          modname = p + 1;
        } else if (state != State::kValue) {
          state = State::kIgnore;
        }
        break;
      case '\0':
      case ' ':
      case '\n':
      case '\t':
      case '\v':
      case '\f':
      case '\r':
        if (quoted && state == State::kValue) {
        } else if (quoted) {
          state = State::kIgnore;
        } else if (state == State::kValue || state == State::kParam) {
          complete = true;
        } else {
          modname = p + 1;
          state = State::kModname;
          quote = std::string::npos;
        }
        break;
      case '.':
        if (state == State::kModname) {
          modname_end = p;
          param = p + 1;
          value = std::string::npos;
          state = State::kParam;
        } else if (state == State::kParam) {
          state = State::kIgnore;
        }
        break;
      case '=':
        if (state == State::kParam) {
          value = p + 1;
          state = State::kValue;
        } else if (state == State::kModname) {
          state = State::kIgnore;
        }
        break;
      default:
        break;
    }
    if (!complete) continue;
    std::string module = s.substr(modname, modname_end - modname);
    std::string param_text = s.substr(param, p - param);
    std::string value_text = value == std::string::npos ? "" : s.substr(value, p - value);
    if (quote != std::string::npos && value != std::string::npos) {
      // `"mod.param=a b"` becomes param=`param="a b"`, as kmod re-quotes it.
      param_text = absl::StrCat(s.substr(param, value - param), "\"", value_text);
      value_text = absl::StrCat("\"", value_text);
    }
    if (module == "modprobe" && absl::StartsWith(param_text, "blacklist=")) {
      for (absl::string_view name : absl::StrSplit(value_text, ',')) {
        blacklist.emplace_back(name);
      }
    } else if (NormaliseName(&module)) {
      for (char& ch : param_text) {
        if (ch == '\t') ch = ' ';
      }
      options.push_back({std::move(module), std::move(param_text)});
    } else {
      errors.push_back(absl::StrCat("kernel command line: ignoring bad option for '", module, "'"));
    }
    modname = p + 1;
    state = State::kModname;
    quote = std::string::npos;
  }
}

std::vector<std::string> ListConfigFiles(const std::vector<std::string>& paths,
                                         const std::string& modules_dir,
                                         std::vector<std::string>* errors) {
  // name -> path; the first path to offer a name keeps it.
  std::map<std::string, std::string> files;
  files.emplace("modules.softdep", modules_dir + "/modules.softdep");
  for (const std::string& path : paths) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    if (!S_ISDIR(st.st_mode)) {
      const size_t slash = path.rfind('/');
      files.emplace(slash == std::string::npos ? path : path.substr(slash + 1), path);
      continue;
    }
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) continue;
    while (const struct dirent* entry = ::readdir(dir)) {
      const absl::string_view name = entry->d_name;
      if (name.empty() || name[0] == '.') continue;
      if (name.size() < 6 || (!absl::EndsWith(name, ".conf") && !absl::EndsWith(name, ".alias"))) {
        continue;
      }
      struct stat entry_st;
      if (::fstatat(::dirfd(dir), entry->d_name, &entry_st, 0) == 0 &&
          S_ISDIR(entry_st.st_mode)) {
        if (errors != nullptr) {
          errors->push_back(
              absl::StrCat("Directories inside directories are not supported: ", path, "/", name));
        }
        continue;
      }
      files.emplace(std::string(name), absl::StrCat(path, "/", name));
    }
    ::closedir(dir);
  }
  std::vector<std::string> ordered;
  ordered.reserve(files.size());
  for (auto& [name, path] : files) ordered.push_back(std::move(path));
  return ordered;
}

ModprobeConfig LoadConfigFiles(const std::vector<std::string>& files) {
  ModprobeConfig config;
  for (const std::string& path : files) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) continue;
    std::string text;
    char buf[16384];
    for (;;) {
      const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    config.ParseFile(text, path);
  }
  return config;
}

}  // namespace hotring::hotplug::modules
