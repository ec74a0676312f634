#include "hotplug/modules/fake_modules_tree.h"

#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hotplug/modules/kmod_index_writer.h"
#include "hotplug/modules/modprobe_config.h"

extern char** environ;

namespace hotring::hotplug::modules {
namespace {

absl::Status MakeDirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::InternalError(absl::StrCat("mkdir ", prefix));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  if (const size_t slash = path.rfind('/'); slash != std::string::npos) {
    if (absl::Status s = MakeDirs(path.substr(0, slash)); !s.ok()) return s;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("write ", path));
  return absl::OkStatus();
}

std::string Modname(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  base = base.substr(0, base.find('.'));
  for (char& c : base) {
    if (c == '-') c = '_';
  }
  return base;
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path);
}

}  // namespace

absl::StatusOr<FakeModulesTree> FakeModulesTree::Create(std::string version) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string templ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/modtree.XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) return absl::InternalError("mkdtemp");
  FakeModulesTree tree;
  tree.root_ = templ;
  tree.version_ = std::move(version);
  return tree;
}

FakeModulesTree::FakeModulesTree(FakeModulesTree&& other) noexcept { *this = std::move(other); }

FakeModulesTree& FakeModulesTree::operator=(FakeModulesTree&& other) noexcept {
  root_ = std::exchange(other.root_, "");
  version_ = std::move(other.version_);
  modules_ = std::move(other.modules_);
  builtins_ = std::move(other.builtins_);
  configs_ = std::move(other.configs_);
  return *this;
}

FakeModulesTree::~FakeModulesTree() {
  if (!root_.empty()) ::nftw(root_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

void FakeModulesTree::AddConfig(std::string dir, std::string name, std::string text) {
  configs_.push_back({std::move(dir), std::move(name), std::move(text)});
}

absl::Status FakeModulesTree::Write(bool binary) const {
  const std::string dir = modules_dir();
  if (absl::Status s = MakeDirs(dir); !s.ok()) return s;
  std::string dep_text;
  std::string alias_text = "# Aliases extracted from modules themselves.\n";
  std::string symbols_text = "# Aliases for symbols, used by symbol_request().\n";
  std::string softdep_text = "# Soft dependencies extracted from modules themselves.\n";
  KmodIndexWriter dep_bin;
  KmodIndexWriter alias_bin;
  KmodIndexWriter symbols_bin;
  // depmod's priority is the module's position in its module order.
  for (size_t i = 0; i < modules_.size(); ++i) {
    const Module& m = modules_[i];
    const std::string name = Modname(m.path);
    const uint32_t priority = static_cast<uint32_t>(i);
    std::string line = absl::StrCat(m.path, ":");
    for (const std::string& d : m.deps) absl::StrAppend(&line, " ", d);
    absl::StrAppend(&dep_text, line, "\n");
    dep_bin.Insert(name, line, priority);
    for (const std::string& a : m.aliases) {
      absl::StrAppend(&alias_text, "alias ", a, " ", name, "\n");
      std::string normalised = a;
      if (NormaliseName(&normalised)) alias_bin.Insert(normalised, name, priority);
    }
    for (const std::string& s : m.symbols) {
      absl::StrAppend(&symbols_text, "alias symbol:", s, " ", name, "\n");
      symbols_bin.Insert(absl::StrCat("symbol:", s), name, priority);
    }
    for (const std::string& s : m.softdeps) {
      absl::StrAppend(&softdep_text, "softdep ", name, " ", s, "\n");
    }
    if (absl::Status s = WriteText(absl::StrCat(dir, "/", m.path), "fake module\n"); !s.ok()) {
      return s;
    }
  }
  std::string builtin_text;
  std::string modinfo;
  KmodIndexWriter builtin_bin;
  KmodIndexWriter builtin_alias_bin;
  for (const Builtin& b : builtins_) {
    const std::string name = Modname(b.path);
    absl::StrAppend(&builtin_text, b.path, "\n");
    builtin_bin.Insert(name, "", 0);
    absl::StrAppend(&modinfo, name, ".file=", name, std::string(1, '\0'));
    for (const std::string& a : b.aliases) {
      absl::StrAppend(&modinfo, name, ".alias=", a, std::string(1, '\0'));
      std::string normalised = a;
      if (NormaliseName(&normalised)) builtin_alias_bin.Insert(normalised, name, 0);
    }
  }
  const std::pair<const char*, const std::string*> texts[] = {
      {"modules.dep", &dep_text},         {"modules.alias", &alias_text},
      {"modules.symbols", &symbols_text}, {"modules.softdep", &softdep_text},
      {"modules.builtin", &builtin_text}, {"modules.builtin.modinfo", &modinfo}};
  for (const auto& [name, text] : texts) {
    if (absl::Status s = WriteText(absl::StrCat(dir, "/", name), *text); !s.ok()) return s;
  }
  if (binary) {
    const std::pair<const char*, const KmodIndexWriter*> bins[] = {
        {"modules.dep.bin", &dep_bin},         {"modules.alias.bin", &alias_bin},
        {"modules.symbols.bin", &symbols_bin}, {"modules.builtin.bin", &builtin_bin},
        {"modules.builtin.alias.bin", &builtin_alias_bin}};
    for (const auto& [name, writer] : bins) {
      if (absl::Status s = WriteText(absl::StrCat(dir, "/", name), writer->Serialize()); !s.ok()) {
        return s;
      }
    }
  }
  for (const Config& c : configs_) {
    if (absl::Status s = WriteText(absl::StrCat(root_, c.dir, "/", c.name), c.text); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

std::string RunCapture(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "";
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  ::posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buf[65536];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  ::close(fds[0]);
  return out;
}

}  // namespace hotring::hotplug::modules
