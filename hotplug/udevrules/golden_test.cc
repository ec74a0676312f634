// The executor against Debian 12's systemd-udevd 252 on the same devices and rules: for each
// golden of testing/udevrules/golden (make_goldens.sh ran `udevadm test` for it), the same event
// runs here over the same tree (testing/udev_devices.h), fixtures and rules, and every fact the
// golden holds must come out the same: properties, interface name, links, RUN list, the node's
// owner and mode, link priority, database persistence, attribute and sysctl writes, and what was
// reported while the rules loaded.
//
// Sets: "keys" (every key, operator and substitution), "board" (a board layer's rules),
// "errors" (rules udevd reports problems in), "layers" (rules directories hiding and masking
// each other), "debian" (Debian's own /lib/udev/rules.d, when this machine has the same files
// the goldens were made with: the udev package is not a build dependency). Debian's rules use
// builtins hotring does not have (hwdb, net_id, net_setup_link, blkid, keyboard): the
// "debian" runs answer those with udevd's own answers recorded in the golden, and the
// "debian_own_builtins" runs answer only with hotring's input_id, path_id and usb_id, and must
// agree with udevd wherever the other builtins had nothing to say.
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "hotplug/udevrules/compiled_rules.h"
#include "hotplug/udevrules/executor.h"
#include "hotplug/udevrules/rule_files.h"
#include "hotplug/udevrules/test_host.h"
#include "testing/fake_sysfs.h"
#include "testing/udev_devices.h"

namespace hotring::hotplug::udevrules {
namespace {

std::string Runfiles() {
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(var); dir != nullptr) return absl::StrCat(dir, "/hotring");
  }
  return ".";
}

std::string DataDir() { return absl::StrCat(Runfiles(), "/testing/udevrules"); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string Unescape(absl::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) {
      out.push_back(v[i + 1] == 'n' ? '\n' : v[i + 1]);
      ++i;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

// One golden file.
struct Golden {
  std::string set;
  std::string name;
  std::string action;
  std::string devpath;
  std::map<std::string, std::string> consts;
  std::vector<std::pair<std::string, std::string>> properties;
  std::optional<std::string> interface_name;
  std::vector<std::string> links;
  std::vector<std::string> run;
  std::optional<NodePermissions> node;
  int db_priority = 0;
  bool db_persist = false;
  std::map<std::string, std::string> writes;
  std::map<std::string, std::string> sysctls;
  std::vector<std::string> load;  // "FILE:LINE message"
  // Builtin command -> its properties, or nullopt when it failed.
  std::map<std::string, std::optional<OwnedProperties>> builtins;
};

Golden ParseGolden(const std::string& set, const std::string& name, const std::string& text) {
  Golden g;
  g.set = set;
  g.name = name;
  std::string builtin;
  OwnedProperties builtin_props;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    const size_t space = line.find(' ');
    const absl::string_view kind = line.substr(0, space);
    const absl::string_view rest = space == absl::string_view::npos ? "" : line.substr(space + 1);
    const auto kv = [&](absl::string_view s) {
      const size_t eq = s.find('=');
      return std::pair<std::string, std::string>(std::string(s.substr(0, eq)), std::string(s.substr(eq + 1)));
    };
    if (kind == "action") g.action = std::string(rest);
    if (kind == "devpath") g.devpath = std::string(rest);
    if (kind == "const") {
      const size_t sp = rest.find(' ');
      g.consts[std::string(rest.substr(0, sp))] = std::string(rest.substr(sp + 1));
    }
    if (kind == "property") g.properties.push_back(kv(rest));
    if (kind == "name") g.interface_name = std::string(rest);
    if (kind == "link") g.links.emplace_back(rest);
    if (kind == "run") g.run.emplace_back(rest);
    if (kind == "node") {
      std::vector<std::string> f = absl::StrSplit(rest, ' ');
      NodePermissions n;
      (void)absl::SimpleAtoi(f[0], &n.uid);
      (void)absl::SimpleAtoi(f[1], &n.gid);
      (void)ParseOctalMode(f[2], &n.mode);
      g.node = n;
    }
    if (kind == "db-priority") (void)absl::SimpleAtoi(rest, &g.db_priority);
    if (kind == "db-persist") g.db_persist = true;
    if (kind == "write") {
      auto [k, v] = kv(rest);
      g.writes[k] = Unescape(v);
    }
    if (kind == "sysctl") {
      auto [k, v] = kv(rest);
      g.sysctls[k] = Unescape(v);
    }
    if (kind == "load") g.load.emplace_back(rest);
    if (kind == "builtin") {
      builtin = std::string(rest);
      builtin_props.clear();
    }
    if (kind == "builtin-property") builtin_props.push_back(kv(rest));
    if (kind == "builtin-result") {
      g.builtins[builtin] = rest == "ok" ? std::optional<OwnedProperties>(builtin_props) : std::nullopt;
    }
  }
  return g;
}

// The golden's properties as a map; DEVLINKS, TAGS and CURRENT_TAGS are sets in udevd (their
// order varies from run to run), so they are compared sorted, and so are the test rules'
// properties named *_SET that hold $links.
std::string Canonical(absl::string_view key, absl::string_view value) {
  if (key == "DEVLINKS" || absl::EndsWith(key, "_SET") || absl::EndsWith(key, "_SET2")) {
    std::vector<std::string> v = absl::StrSplit(value, ' ', absl::SkipEmpty());
    std::sort(v.begin(), v.end());
    return absl::StrJoin(v, " ");
  }
  if (key == "TAGS" || key == "CURRENT_TAGS") {
    std::vector<std::string> v = absl::StrSplit(value, ':', absl::SkipEmpty());
    std::sort(v.begin(), v.end());
    return absl::StrCat(":", absl::StrJoin(v, ":"), ":");
  }
  return std::string(value);
}

template <typename Pairs>
std::map<std::string, std::string> PropertyMap(const Pairs& props) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : props) {
    if (k == "USEC_INITIALIZED") continue;
    m[std::string(k)] = Canonical(k, v);
  }
  return m;
}

// "missing KEY=V", "extra KEY=V", "KEY: ours 'a', udevd 'b'" lines.
std::vector<std::string> DiffProperties(const std::map<std::string, std::string>& ours,
                                        const std::map<std::string, std::string>& theirs) {
  std::vector<std::string> diff;
  for (const auto& [k, v] : theirs) {
    auto it = ours.find(k);
    if (it == ours.end()) {
      diff.push_back(absl::StrCat("missing ", k, "=", v));
    } else if (it->second != v) {
      diff.push_back(absl::StrCat(k, ": ours '", it->second, "', udevd '", v, "'"));
    }
  }
  for (const auto& [k, v] : ours) {
    if (!theirs.contains(k)) diff.push_back(absl::StrCat("extra ", k, "=", v));
  }
  return diff;
}

// Who answers builtins: hotring's input_id, path_id and usb_id and udevd's recorded answers for
// the rest (kOwn), udevd's recorded answers for all (kRecorded: the engine alone is under test),
// or hotring's three alone, the others failing (kOwnOnly: what a daemon with these builtins does).
enum class BuiltinMode { kOwn, kRecorded, kOwnOnly };

struct Param {
  std::string set;
  std::string file;  // golden file name
  BuiltinMode builtins;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.set << "/" << p.file; }

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  const BuiltinMode m = info.param.builtins;
  std::string n = absl::StrCat(info.param.set,
                               m == BuiltinMode::kOwn ? "" : m == BuiltinMode::kRecorded ? "_recorded" : "_own_only",
                               "_", info.param.file);
  if (absl::EndsWith(n, ".golden")) n.resize(n.size() - 7);
  for (char& c : n) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

std::vector<Param> AllGoldens() {
  std::vector<Param> params;
  for (const std::string& set : ListDir(absl::StrCat(DataDir(), "/golden"))) {
    for (const std::string& file : ListDir(absl::StrCat(DataDir(), "/golden/", set))) {
      if (!absl::EndsWith(file, ".golden")) continue;
      if (set == "debian") {
        params.push_back({set, file, BuiltinMode::kRecorded});
        params.push_back({set, file, BuiltinMode::kOwnOnly});
      } else {
        params.push_back({set, file, BuiltinMode::kOwn});
      }
    }
  }
  return params;
}

std::string TempDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string path = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, ".XXXXXX");
  if (::mkdtemp(path.data()) == nullptr) return "";
  return path;
}

void CopyFile(const std::string& from, const std::string& to) {
  std::ofstream(to, std::ios::binary) << ReadText(from);
}

class GoldenTest : public ::testing::TestWithParam<Param> {
 protected:
  // The compiled rules of a set, shared by its goldens.
  static const CompiledRules* RulesFor(const std::string& set, const PasswdFiles& names) {
    static auto* cache = new std::map<std::string, std::unique_ptr<CompiledRules>>();
    auto it = cache->find(set);
    if (it != cache->end()) return it->second.get();
    CompileOptions options;
    options.names = &names;
    const std::string dir = absl::StrCat(DataDir(), "/rules/", set);
    absl::StatusOr<std::unique_ptr<CompiledRules>> rules;
    if (set == "debian") {
      rules = LoadRules({"/lib/udev/rules.d"}, options);
    } else if (set == "layers") {
      rules = LoadRules({dir + "/etc", dir + "/run", dir + "/lib"}, options);
    } else {
      rules = LoadRules({dir}, options);
    }
    EXPECT_TRUE(rules.ok()) << rules.status();
    if (!rules.ok()) return nullptr;
    return (*cache)[set] = std::move(*rules), (*cache)[set].get();
  }
};

TEST_P(GoldenTest, SameAsUdevd) {
  const Param& p = GetParam();
  const Golden g = ParseGolden(p.set, p.file, ReadText(absl::StrCat(DataDir(), "/golden/", p.set, "/", p.file)));
  ASSERT_FALSE(g.devpath.empty()) << p.file;
  if (p.set == "debian") {
    const std::string expected = ReadText(absl::StrCat(DataDir(), "/golden/debian/rules.size"));
    size_t size = 0;
    for (const std::string& f : ListDir("/lib/udev/rules.d")) {
      if (absl::EndsWith(f, ".rules")) size += ReadText(absl::StrCat("/lib/udev/rules.d/", f)).size();
    }
    if (absl::StrCat(size) != absl::StripAsciiWhitespace(expected)) {
      GTEST_SKIP() << "this machine's /lib/udev/rules.d is not Debian 12's udev 252 (the goldens' "
                      "rules are " << expected << " bytes, these " << size << ")";
    }
  }

  // The tree, shared by the tests of this process: what a run writes is put back afterwards.
  static testing::FakeSysfs* const sys = [] {
    absl::StatusOr<testing::FakeSysfs> made = testing::FakeSysfs::Create();
    EXPECT_TRUE(made.ok()) << made.status();
    auto* tree = new testing::FakeSysfs(std::move(*made));
    const absl::StatusOr<std::vector<testing::CatalogDevice>> devices = testing::BuildUdevCatalog(*tree);
    EXPECT_TRUE(devices.ok()) << devices.status();
    return tree;
  }();

  // The files the run sees: the rules' programs and import file in /lib/udev, /proc/sys, the
  // database.
  const std::string root = TempDir("root");
  ASSERT_EQ(::mkdir(absl::StrCat(root, "/lib").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(absl::StrCat(root, "/lib/udev").c_str(), 0755), 0);
  for (const std::string& f : ListDir(absl::StrCat(DataDir(), "/bin"))) {
    ASSERT_EQ(::symlink(absl::StrCat(DataDir(), "/bin/", f).c_str(), absl::StrCat(root, "/lib/udev/", f).c_str()), 0);
  }
  CopyFile(absl::StrCat(DataDir(), "/fixtures/rt-import.env"), absl::StrCat(root, "/lib/udev/rt-import.env"));
  const std::string proc_sys = TempDir("proc_sys");
  ASSERT_EQ(::mkdir(absl::StrCat(proc_sys, "/kernel").c_str(), 0755), 0);
  for (const std::string& f : ListDir(absl::StrCat(DataDir(), "/fixtures/proc_sys/kernel"))) {
    CopyFile(absl::StrCat(DataDir(), "/fixtures/proc_sys/kernel/", f), absl::StrCat(proc_sys, "/kernel/", f));
  }
  const std::string db = TempDir("db");
  {
    std::ofstream out;
    for (absl::string_view line : absl::StrSplit(ReadText(absl::StrCat(DataDir(), "/fixtures/database")), '\n')) {
      if (absl::ConsumePrefix(&line, "== ")) {
        out = std::ofstream(absl::StrCat(db, "/", line));
      } else if (out.is_open()) {
        out << line << "\n";
      }
    }
  }
  TestHost::Options options;
  options.roots.sysfs = sys->root();
  options.roots.proc_sys = proc_sys;
  options.roots.files = root;
  options.program_dir = absl::StrCat(root, "/lib/udev");
  options.database_dir = db;
  options.cmdline = std::string(absl::StripAsciiWhitespace(ReadText(absl::StrCat(DataDir(), "/fixtures/cmdline"))));
  options.arch = g.consts.at("arch");
  options.virt = g.consts.at("virt");
  options.names = PasswdFiles::FromText(ReadText(absl::StrCat(DataDir(), "/fixtures/root/etc/passwd")),
                                        ReadText(absl::StrCat(DataDir(), "/fixtures/root/etc/group")));
  if (p.builtins != BuiltinMode::kOwnOnly) {
    for (const auto& [command, answer] : g.builtins) {
      options.recorded_builtins[absl::StrCat(g.devpath, "\t", command)] = answer;
    }
  }
  options.own_builtins = p.builtins != BuiltinMode::kRecorded;
  static const PasswdFiles* names = new PasswdFiles(options.names);
  const CompiledRules* rules = RulesFor(p.set, *names);
  ASSERT_NE(rules, nullptr);
  TestHost host(std::move(options));
  struct Restore {
    TestHost& host;
    ~Restore() { host.RestoreAttributes(); }
  } restore{host};

  // The event as udevadm test makes it from sysfs: DEVPATH, the uevent file, ACTION, SUBSYSTEM.
  std::vector<std::pair<std::string, std::string>> env = {{"DEVPATH", g.devpath}};
  std::string uevent;
  ASSERT_TRUE(host.ReadAttribute(g.devpath, "uevent", &uevent));
  for (absl::string_view line : absl::StrSplit(uevent, '\n', absl::SkipEmpty())) {
    const size_t eq = line.find('=');
    env.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  env.emplace_back("ACTION", g.action);
  std::string subsystem;
  if (host.Subsystem(g.devpath, &subsystem)) env.emplace_back("SUBSYSTEM", subsystem);
  std::vector<PropertyView> views;
  for (const auto& [k, v] : env) views.emplace_back(k, v);

  const Outcome o = ExecuteRules(*rules, {.action = g.action, .devpath = g.devpath, .properties = views}, host);
  ASSERT_TRUE(o.status.ok()) << o.status;

  const std::vector<std::string> diff = DiffProperties(PropertyMap(o.properties), PropertyMap(g.properties));
  const auto ours = [](absl::string_view command) {
    return absl::StartsWith(command, "input_id") || absl::StartsWith(command, "path_id") ||
           absl::StartsWith(command, "usb_id");
  };
  // Builtins hotring lacks that had something to say in udevd, and what they said.
  std::vector<std::string> lacking;
  std::set<std::string> lacking_keys;
  for (const auto& [command, answer] : g.builtins) {
    if (ours(command) || !answer.has_value()) continue;
    lacking.push_back(command);
    for (const auto& [k, v] : *answer) lacking_keys.insert(k);
  }
  if (p.builtins == BuiltinMode::kOwnOnly && !lacking.empty()) {
    // The differences must all come from those builtins: properties they set, and what rules
    // make of them (links from blkid's ID_FS_UUID, the name from net_setup_link's ID_NET_NAME).
    std::vector<std::string> unexplained;
    for (const std::string& d : diff) {
      const std::string key = d.substr(absl::StartsWith(d, "missing ") ? 8 : absl::StartsWith(d, "extra ") ? 6 : 0);
      const std::string k = key.substr(0, key.find_first_of("=:"));
      if (!lacking_keys.contains(k) && k != "DEVLINKS") unexplained.push_back(d);
    }
    std::cout << p.file << ": udevd used builtins hotring lacks (" << absl::StrJoin(lacking, "; ")
              << "); differences: " << (diff.empty() ? "none" : absl::StrJoin(diff, "; ")) << "\n";
    EXPECT_TRUE(unexplained.empty()) << absl::StrJoin(unexplained, "\n");
    return;
  }
  EXPECT_TRUE(diff.empty()) << p.set << "/" << p.file << ":\n  " << absl::StrJoin(diff, "\n  ") << "\nlog:\n  "
                            << absl::StrJoin(o.log, "\n  ");

  // NAME.
  EXPECT_EQ(o.name, g.interface_name);
  // Links: DEVLINKS as udevd has it, and the normalized list of those inside /dev.
  std::vector<std::string> expected_links;
  for (const std::string& l : g.links) {
    std::vector<std::string> parts;
    bool escapes = false;
    for (absl::string_view part : absl::StrSplit(l, '/', absl::SkipEmpty())) {
      if (part == ".") continue;
      if (part == "..") escapes = true;
      parts.emplace_back(part);
    }
    if (!escapes) expected_links.push_back(absl::StrJoin(parts, "/"));
  }
  std::vector<std::string> links = o.links;
  std::sort(links.begin(), links.end());
  std::sort(expected_links.begin(), expected_links.end());
  EXPECT_EQ(links, expected_links);
  // RUN, in order.
  std::vector<std::string> run;
  for (const RunEntry& r : o.run) run.push_back(r.command);
  EXPECT_EQ(run, g.run);
  if (g.action != "remove") {
    // udevd applies permissions and writes its database except for remove events.
    if (g.node.has_value()) {
      const NodePermissions n = PermissionsFor(o, views);
      EXPECT_EQ(n.uid, g.node->uid);
      EXPECT_EQ(n.gid, g.node->gid);
      EXPECT_EQ(n.mode, g.node->mode) << std::oct << n.mode << " vs " << g.node->mode;
    }
    EXPECT_EQ(o.link_priority, g.db_priority);
    EXPECT_EQ(o.db_persist, g.db_persist);
  }
  EXPECT_EQ(host.attribute_writes(), g.writes);
  EXPECT_EQ(host.sysctl_writes(), g.sysctls);

  // What was reported while loading: the same lines ("FILE:LINE"), and the same messages.
  std::set<std::string> expected_load;
  for (const std::string& l : g.load) {
    if (absl::StrContains(l, "Found builtin command")) continue;  // udevd's debug level
    expected_load.insert(l);
  }
  std::set<std::string> load;
  for (const Diagnostic& d : rules->diagnostics().kept()) {
    // Deliberately louder than udevd, which only says so at debug level.
    if (absl::StartsWith(d.message, "Line longer than")) continue;
    load.insert(absl::StrCat(d.file.substr(d.file.rfind('/') + 1), ":", d.line, " ", d.message));
  }
  EXPECT_EQ(load, expected_load);
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenTest, ::testing::ValuesIn(AllGoldens()), ParamName);

// The rules files of each set, in the order udevd read them (golden/SET/rules.files: the paths
// udevd printed, its directories standing for the set's own).
TEST(GoldenFilesTest, TheSameRulesFilesInTheSameOrderAsUdevd) {
  for (const std::string& set : ListDir(absl::StrCat(DataDir(), "/golden"))) {
    std::vector<std::string> theirs;
    for (absl::string_view path :
         absl::StrSplit(ReadText(absl::StrCat(DataDir(), "/golden/", set, "/rules.files")), '\n', absl::SkipEmpty())) {
      // /etc/udev/rules.d, /run/udev/rules.d, /usr/lib/udev/rules.d: etc, run, lib.
      const std::string dir = absl::StrContains(path, "/etc/") ? "etc" : absl::StrContains(path, "/run/") ? "run" : "lib";
      theirs.push_back(absl::StrCat(dir, " ", path.substr(path.rfind('/') + 1)));
    }
    std::vector<std::string> dirs;
    if (set == "debian") {
      dirs = {"/lib/udev/rules.d"};
    } else if (set == "layers") {
      const std::string d = absl::StrCat(DataDir(), "/rules/layers");
      dirs = {d + "/etc", d + "/run", d + "/lib"};
    } else {
      dirs = {absl::StrCat(DataDir(), "/rules/", set)};
    }
    absl::StatusOr<std::vector<RulesFile>> files = ListRulesFiles(dirs);
    ASSERT_TRUE(files.ok()) << files.status();
    std::vector<std::string> ours;
    for (const RulesFile& f : *files) {
      if (f.masked) continue;  // udevd lists it, then skips it as empty: not "Reading"
      const std::string dir = set == "debian" ? "lib" : set == "layers" ? f.path.substr(f.path.rfind('/', f.path.rfind('/') - 1) + 1, 3) : "etc";
      ours.push_back(absl::StrCat(dir, " ", f.name));
    }
    if (set == "debian" && ours.size() != theirs.size()) {
      std::cout << "debian: this machine's rules differ from the goldens'; not compared\n";
      continue;
    }
    EXPECT_EQ(ours, theirs) << set;
  }
}

}  // namespace
}  // namespace hotring::hotplug::udevrules
