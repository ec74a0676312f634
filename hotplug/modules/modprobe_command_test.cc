// `hotring modprobe` and hotring invoked as `modprobe`, run as a process on a fake tree:
// output, messages and exit codes as kmod's. Nothing is loaded (--show-depends, -R, -n).
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hotplug/modules/fake_modules_tree.h"

extern char** environ;

namespace hotring::hotplug::modules {
namespace {

// A file of the test's runfiles (the workspace is "hotring", or "__main__" when used alone).
std::string RunfilePath(const std::string& rel) {
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(var)) {
      for (const char* workspace : {"/hotring/", "/__main__/"}) {
        const std::string path = absl::StrCat(dir, workspace, rel);
        if (::access(path.c_str(), F_OK) == 0) return path;
      }
    }
  }
  return rel;
}

std::string HotringBinary() { return RunfilePath("hotring"); }

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

Result RunProgram(const std::string& program, const std::vector<std::string>& args) {
  int out[2], err[2];
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  ::posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<char*> argv = {const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  Result r;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err[1]);
  if (rc == 0) {
    r.out = ReadAll(out[0]);  // outputs are small: no pipe can fill while the other waits
    r.err = ReadAll(err[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  ::close(out[0]);
  ::close(err[0]);
  return r;
}

class ModprobeCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<FakeModulesTree> tree = FakeModulesTree::Create("6.1.0-cli");
    ASSERT_TRUE(tree.ok());
    tree_ = std::make_unique<FakeModulesTree>(std::move(*tree));
    tree_->AddModule({.path = "kernel/lib/base.ko"});
    tree_->AddModule({.path = "kernel/drivers/net/nic.ko",
                      .deps = {"kernel/lib/base.ko"},
                      .aliases = {"pci:v00001234d*"}});
    tree_->AddModule({.path = "kernel/drivers/misc/old.ko", .aliases = {"pci:v00005678d*"}});
    tree_->AddBuiltin({.path = "kernel/drivers/rtc/rtc-cmos.ko", .aliases = {"platform:rtc_cmos"}});
    tree_->AddConfig("/etc/modprobe.d", "local.conf", "blacklist old\noptions nic speed=10\n");
    ASSERT_TRUE(tree_->Write().ok());
    // hotring as `modprobe`, the name the kernel's request_module runs.
    link_ = absl::StrCat(tree_->root(), "/modprobe");
    ASSERT_EQ(::symlink(HotringBinary().c_str(), link_.c_str()), 0);
  }

  // Options pointing at the fake tree and a fixed kernel command line.
  std::vector<std::string> Tree(std::vector<std::string> args) const {
    std::vector<std::string> all = {"--root", tree_->root(), "-S", tree_->version(),
                                    "--kernel-cmdline", "nic.duplex=full"};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  std::string Path(const std::string& rel) const {
    return absl::StrCat(tree_->modules_dir(), "/", rel);
  }

  std::unique_ptr<FakeModulesTree> tree_;
  std::string link_;
};

TEST_F(ModprobeCommandTest, ShowDependsPrintsWhatKmodPrints) {
  std::vector<std::string> args = {"modprobe"};
  for (const std::string& a : Tree({"--show-depends", "pci:v00001234d00000001"})) args.push_back(a);
  const Result r = RunProgram(HotringBinary(), args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " \n", "insmod ",
                                Path("kernel/drivers/net/nic.ko"), " speed=10 duplex=full \n"));
  EXPECT_EQ(r.err, "");
}

TEST_F(ModprobeCommandTest, AsModprobeTheKernelsRequestModuleFormWorks) {
  // request_module runs `modprobe -q -- NAME`; --show-depends keeps this machine untouched.
  const Result r = RunProgram(link_, Tree({"--show-depends", "-q", "--", "platform:rtc_cmos"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "builtin rtc_cmos\n");
  // A builtin module is already in the kernel: a real load does nothing and succeeds.
  const Result load = RunProgram(link_, Tree({"-q", "--", "rtc-cmos"}));
  EXPECT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(load.out, "");
}

TEST_F(ModprobeCommandTest, NotFoundExitsOneWithKmodsMessageUnlessQuiet) {
  Result r = RunProgram(link_, Tree({"--show-depends", "nothing-here"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, absl::StrCat("modprobe: FATAL: Module nothing-here not found in directory ",
                                tree_->modules_dir(), "\n"));
  r = RunProgram(link_, Tree({"-q", "nothing-here"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "");
}

TEST_F(ModprobeCommandTest, BlacklistedAliasIsNotAnError) {
  Result r = RunProgram(link_, Tree({"--show-depends", "pci:v00005678d00000001"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  r = RunProgram(link_, Tree({"--show-depends", "old"}));  // by name: loads anyway
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/drivers/misc/old.ko"), " \n"));
  r = RunProgram(link_, Tree({"--show-depends", "-b", "old"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
}

TEST_F(ModprobeCommandTest, ResolveAliasAllAndParameters) {
  Result r = RunProgram(link_, Tree({"-R", "pci:v00001234d00000001"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "nic\n");
  r = RunProgram(link_, Tree({"--show-depends", "-a", "base", "missing", "rtc_cmos"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " \n", "builtin rtc_cmos\n"));
  EXPECT_EQ(r.err, absl::StrCat("modprobe: WARNING: Module missing not found in directory ",
                                tree_->modules_dir(), "\n"));
  r = RunProgram(link_, Tree({"--show-depends", "base", "a=1", "b=two words"}));
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " a=1 b=\"two words\"\n"));
}

// kmod's own test trees ship a 0-byte modules.builtin.bin: kmod loses that index, silently.
TEST_F(ModprobeCommandTest, AnEmptyIndexCostsOnlyItselfAndKmodSaysNothing) {
  const std::string builtin_bin = Path("modules.builtin.bin");
  ASSERT_EQ(::truncate(builtin_bin.c_str(), 0), 0);
  Result r = RunProgram(link_, Tree({"--show-depends", "pci:v00001234d00000001"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " \n", "insmod ",
                                Path("kernel/drivers/net/nic.ko"), " speed=10 duplex=full \n"));
  EXPECT_EQ(r.err, "");
  // The builtin's alias is in the other index and still answers.
  r = RunProgram(link_, Tree({"-R", "platform:rtc_cmos"}));
  EXPECT_EQ(r.out, "rtc_cmos\n");
  // -vv says which file was passed over.
  r = RunProgram(link_, Tree({"-vv", "--show-depends", "base"}));
  EXPECT_EQ(r.err, absl::StrCat("modprobe: INFO: ", builtin_bin,
                                ": empty file; nothing is looked up in it\n"));
}

TEST_F(ModprobeCommandTest, ACorruptIndexIsReportedOnceAndTheRestAnswers) {
  const std::string alias_bin = Path("modules.alias.bin");
  { std::ofstream(alias_bin, std::ios::trunc) << "this is not a kmod index\n"; }
  Result r = RunProgram(link_, Tree({"--show-depends", "nic"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " \n", "insmod ",
                                Path("kernel/drivers/net/nic.ko"), " speed=10 duplex=full \n"));
  EXPECT_EQ(r.err, absl::StrCat("modprobe: ERROR: ", alias_bin,
                                ": not a kmod index (magic 74686973); nothing is looked up in it\n"));
  r = RunProgram(link_, Tree({"-q", "--show-depends", "pci:v00001234d00000001"}));
  EXPECT_EQ(r.exit_code, 1);  // only modules.alias knew that alias
  EXPECT_EQ(r.err, "");
}

TEST_F(ModprobeCommandTest, ShowConfigPrintsTheConfigurationAndTheIndexes) {
  for (const char* flag : {"-c", "--showconfig", "--show-config"}) {
    const Result r = RunProgram(link_, Tree({flag}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out,
              "blacklist old\n"
              "options nic speed=10\n"
              "options nic duplex=full\n"
              "\n# End of configuration files. Dumping indexes now:\n\n"
              "alias pci:v00001234d* nic\n"
              "alias pci:v00005678d* old\n")
        << flag;
  }
}

TEST_F(ModprobeCommandTest, WithoutAModuleTreeTheConfigurationStillAnswers) {
  // As kmod: no /lib/modules/V at all still prints the configuration and runs install commands
  // that need no module file.
  const std::vector<std::string> base = {"--root", tree_->root(), "-S", "9.9.9-none",
                                         "--kernel-cmdline", "psmouse.proto=imps"};
  std::vector<std::string> args = base;
  args.push_back("-c");
  Result r = RunProgram(link_, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "blacklist old\n"
            "options nic speed=10\n"
            "options psmouse proto=imps\n"
            "\n# End of configuration files. Dumping indexes now:\n\n");
  args = base;
  for (const char* a : {"--show-depends", "nic"}) args.push_back(a);
  r = RunProgram(link_, args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, absl::StrCat("modprobe: FATAL: Module nic not found in directory ",
                                tree_->root(), "/lib/modules/9.9.9-none\n"));
}

TEST_F(ModprobeCommandTest, IgnoreInstallLoadsTheFileOfTheModuleAskedFor) {
  tree_->AddConfig("/etc/modprobe.d", "install.conf",
                   "install nic /sbin/custom-nic $CMDLINE_OPTS\nsoftdep nic pre: old\n");
  ASSERT_TRUE(tree_->Write().ok());
  Result r = RunProgram(link_, Tree({"--show-depends", "nic"}));
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " \n", "insmod ",
                                Path("kernel/drivers/misc/old.ko"), " \n", "insmod ",
                                Path("kernel/drivers/net/nic.ko"), " speed=10 duplex=full \n"));
  // Softdeps make kmod skip the install command anyway; without them it is used...
  tree_->AddConfig("/etc/modprobe.d", "install.conf", "install nic /sbin/custom-nic\n");
  ASSERT_TRUE(tree_->Write().ok());
  r = RunProgram(link_, Tree({"--show-depends", "nic"}));
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " \n",
                                "install /sbin/custom-nic speed=10 duplex=full \n"));
  // ...and -i ignores it.
  r = RunProgram(link_, Tree({"--show-depends", "-i", "nic"}));
  EXPECT_EQ(r.out, absl::StrCat("insmod ", Path("kernel/lib/base.ko"), " \n", "insmod ",
                                Path("kernel/drivers/net/nic.ko"), " speed=10 duplex=full \n"));
}

TEST_F(ModprobeCommandTest, BadConfigurationLinesAreReportedEvenWhenQuiet) {
  // kmod reads the configuration before -q takes effect.
  tree_->AddConfig("/etc/modprobe.d", "bad.conf", "frobnicate x\n");
  ASSERT_TRUE(tree_->Write().ok());
  const Result r = RunProgram(link_, Tree({"-q", "--show-depends", "base"}));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, absl::StrCat("modprobe: ERROR: ", tree_->root(),
                                "/etc/modprobe.d/bad.conf line 1: ignoring bad line starting "
                                "with 'frobnicate'\n"));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// `modprobe -c` against Debian's modprobe (kmod 30) on the same tree: each case of
// testdata/show_config holds a root (modprobe.d directories, the tree's modules.softdep and
// damaged index files, /proc/cmdline) and expected.out, which testing/kmod/compare_modprobe.sh
// --update-goldens wrote from the real modprobe run in a chroot of that root.
TEST(ModprobeShowConfigTest, PrintsWhatDebiansModprobePrintsForEachCase) {
  const std::string dir = RunfilePath("hotplug/modules/testdata/show_config");
  std::vector<std::string> cases;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') cases.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  // directives, dirs-and-order, empty, kernel-cmdline, no-tree: a lost case must fail.
  ASSERT_GE(cases.size(), 5u) << dir;
  for (const std::string& name : cases) {
    SCOPED_TRACE(name);
    const std::string root = absl::StrCat(dir, "/", name, "/root");
    const Result r = RunProgram(HotringBinary(),
                                {"modprobe", "--root", root, "-S", "4.4.4", "--kernel-cmdline",
                                 ReadFile(root + "/proc/cmdline"), "-c"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, ReadFile(absl::StrCat(dir, "/", name, "/expected.out")));
  }
}

TEST_F(ModprobeCommandTest, UsageErrors) {
  Result r = RunProgram(link_, Tree({}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "modprobe: ERROR: missing parameters. See -h.\n");
  r = RunProgram(link_, {"--frobnicate", "x"});
  EXPECT_EQ(r.exit_code, 1);
  r = RunProgram(link_, {"-h"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--show-depends"), std::string::npos);
}

}  // namespace
}  // namespace hotring::hotplug::modules
