#include "hotplug/modules/modprobe_config.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hotring::hotplug::modules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(ModprobeConfigTest, DirectivesNormaliseNamesAndKeepTheRestOfTheLine) {
  ModprobeConfig c;
  c.ParseFile(
      "# comment\n"
      "alias pci:v*d*sv*[0-9a-f] snd-hda-intel extra ignored\n"
      "blacklist mei-me\n"
      "options snd-pcsp index=-2\n"
      "options foo  two\tspaces\n"
      "install bar /sbin/modprobe --ignore-install bar && echo $CMDLINE_OPTS\n"
      "remove bar /bin/true\n"
      "softdep uhci-hcd pre: ehci-hcd post: a b\n",
      "t.conf");
  ASSERT_THAT(c.aliases, SizeIs(1));
  // '-' becomes '_' outside brackets only; the pattern keeps [0-9a-f].
  EXPECT_EQ(c.aliases[0].pattern, "pci:v*d*sv*[0-9a-f]");
  EXPECT_EQ(c.aliases[0].module, "snd_hda_intel");
  EXPECT_THAT(c.blacklist, ElementsAre("mei_me"));
  ASSERT_THAT(c.options, SizeIs(2));
  EXPECT_EQ(c.options[0].module, "snd_pcsp");
  EXPECT_EQ(c.options[0].options, "index=-2");
  // kmod keeps what follows the one blank after the name, tabs made spaces.
  EXPECT_EQ(c.options[1].options, " two spaces");
  ASSERT_THAT(c.install, SizeIs(1));
  EXPECT_EQ(c.install[0].command, "/sbin/modprobe --ignore-install bar && echo $CMDLINE_OPTS");
  ASSERT_THAT(c.remove, SizeIs(1));
  ASSERT_THAT(c.softdeps, SizeIs(1));
  EXPECT_EQ(c.softdeps[0].pattern, "uhci_hcd");
  EXPECT_THAT(c.softdeps[0].pre, ElementsAre("ehci-hcd"));
  EXPECT_THAT(c.softdeps[0].post, ElementsAre("a", "b"));
  EXPECT_THAT(c.errors, IsEmpty());
}

TEST(ModprobeConfigTest, BadLinesAreReportedAndSkipped) {
  ModprobeConfig c;
  c.ParseFile("alias onlyone\nblacklist\noptions lonely\nfrobnicate x\nalias a]b c\n"
              "  # not a comment for kmod\ninclude /etc/x\n",
              "bad.conf");
  EXPECT_THAT(c.aliases, IsEmpty());
  EXPECT_THAT(c.blacklist, IsEmpty());
  EXPECT_THAT(c.options, IsEmpty());
  EXPECT_THAT(c.errors, SizeIs(7));
  EXPECT_EQ(c.errors[0], "bad.conf line 1: ignoring bad line starting with 'alias'");
}

TEST(ModprobeConfigTest, ContinuationLinesAndSoftdepQuirks) {
  ModprobeConfig c;
  c.ParseFile("options foo a=1 \\\n b=2\n"
              "softdep x pre: a\n"        // one blank: "pre:" seen
              "softdep y  pre: a\n"       // rest is " pre: a": kmod glues the blank to "pre:"
              "softdep z   pre: a\n"      // two leading blanks are skipped again
              "softdep w a b\n",          // no pre:/post:: a line that does nothing
              "q.conf");
  ASSERT_THAT(c.options, SizeIs(1));
  EXPECT_EQ(c.options[0].options, "a=1  b=2");
  ASSERT_THAT(c.softdeps, SizeIs(4));
  EXPECT_THAT(c.softdeps[0].pre, ElementsAre("a"));
  EXPECT_THAT(c.softdeps[1].pre, IsEmpty());
  EXPECT_THAT(c.softdeps[2].pre, ElementsAre("a"));
  EXPECT_THAT(c.softdeps[3].pre, IsEmpty());
  EXPECT_THAT(c.softdeps[3].post, IsEmpty());
}

TEST(ModprobeConfigTest, SoftdepRemembersWhichListEachNameWentToInLineOrder) {
  ModprobeConfig c;
  c.ParseFile("softdep m post: p1 pre: q1 post: p2 q2\n", "o.conf");
  ASSERT_THAT(c.softdeps, SizeIs(1));
  using Part = ModprobeConfig::Softdep::Part;
  EXPECT_THAT(c.softdeps[0].pre, ElementsAre("q1"));
  EXPECT_THAT(c.softdeps[0].post, ElementsAre("p1", "p2", "q2"));
  EXPECT_THAT(c.softdeps[0].order, ElementsAre(Part::kPost, Part::kPre, Part::kPost, Part::kPost));
}

TEST(ModprobeConfigTest, KernelCommandLine) {
  ModprobeConfig c;
  c.ParseKernelCmdline(
      "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet modprobe.blacklist=nouveau,snd-pcsp "
      "snd-hda-intel.model=auto i915.enable_psr=0 foo.bar a.b.c=1 \"parport.dyndbg=file x +p\" "
      "x.y=\"quoted value\" -- init.arg=1\n");
  // kmod keeps blacklist names from the command line as given (no '-' to '_').
  EXPECT_THAT(c.blacklist, ElementsAre("nouveau", "snd-pcsp"));
  std::vector<std::string> got;
  for (const auto& o : c.options) got.push_back(o.module + " " + o.options);
  EXPECT_THAT(got, ElementsAre("snd_hda_intel model=auto", "i915 enable_psr=0", "foo bar",
                               "parport dyndbg=\"file x +p\"", "x y=\"quoted value\"",
                               "init arg=1"));
}

// Bad input gets skipped or reported, never a crash: random bytes biased towards the
// characters the parsers treat specially.
TEST(ModprobeConfigTest, RandomInputNeverCrashes) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab-_.=\"' \t\n\\[]*:#,\x01\xff";
  size_t directives = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const size_t n = rng() % 80;
    for (size_t i = 0; i < n; ++i) {
      text.push_back(rng() % 4 == 0 ? static_cast<char>(rng() % 256)
                                    : alphabet[rng() % alphabet.size()]);
    }
    static const char* kPrefixes[] = {"", "options ", "softdep x ", "alias ", "modprobe.", "a."};
    text = kPrefixes[rng() % std::size(kPrefixes)] + text;
    ModprobeConfig c;
    c.ParseFile(text, "random.conf");
    c.ParseKernelCmdline(text);
    std::string name = text;
    (void)NormaliseName(&name);
    directives += c.options.size() + c.aliases.size() + c.softdeps.size() + c.blacklist.size();
  }
  EXPECT_GT(directives, 0u);  // the generator does reach the parsers' accepting paths
}

std::string MakeDir(const std::string& path) {
  ::mkdir(path.c_str(), 0755);
  return path;
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ModprobeConfigTest, FilesInPrecedenceAndNameOrder) {
  const std::string base = std::string(std::getenv("TEST_TMPDIR")) + "/cfg";
  MakeDir(base);
  const std::string etc = MakeDir(base + "/etc");
  const std::string lib = MakeDir(base + "/lib");
  const std::string mods = MakeDir(base + "/mods");
  Write(etc + "/b.conf", "");
  Write(etc + "/.hidden.conf", "");
  Write(etc + "/notes.txt", "");
  Write(lib + "/a.conf", "");
  Write(lib + "/b.conf", "");  // hidden by etc/b.conf
  Write(lib + "/z.alias", "");
  MakeDir(lib + "/dir.conf");
  Write(base + "/single.conf", "");
  std::vector<std::string> errors;
  const std::vector<std::string> files =
      ListConfigFiles({etc, base + "/missing", lib, base + "/single.conf"}, mods, &errors);
  EXPECT_THAT(files, ElementsAre(lib + "/a.conf", etc + "/b.conf", mods + "/modules.softdep",
                                 base + "/single.conf", lib + "/z.alias"));
  EXPECT_THAT(errors,
              ElementsAre("Directories inside directories are not supported: " + lib + "/dir.conf"));
}

}  // namespace
}  // namespace hotring::hotplug::modules
