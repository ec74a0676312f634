// A fake /lib/modules/VERSION tree (and modprobe.d directories) under a temporary root, for
// tests of module resolution: modules.dep, modules.alias, modules.symbols, modules.builtin,
// modules.builtin.modinfo, modules.softdep as text and, unless asked not to, as kmod's .bin
// indexes (written by KmodIndexWriter the way depmod writes them); tiny placeholder .ko files.
//
//   FakeModulesTree tree = *FakeModulesTree::Create("6.1.0-test");
//   tree.AddModule({.path = "kernel/net/foo.ko", .deps = {"kernel/lib/bar.ko"},
//                   .aliases = {"pci:v00001234d*"}});
//   tree.AddConfig("/etc/modprobe.d", "foo.conf", "options foo x=1\n");
//   ASSERT_OK(tree.Write());
#ifndef HOTRING_HOTPLUG_MODULES_FAKE_MODULES_TREE_H_
#define HOTRING_HOTPLUG_MODULES_FAKE_MODULES_TREE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotring::hotplug::modules {

// Owns a temporary directory tree; removes it when destroyed. Move-only.
class FakeModulesTree {
 public:
  struct Module {
    std::string path;                  // relative to the modules directory
    std::vector<std::string> deps;     // relative paths, in modules.dep's order
    std::vector<std::string> aliases;  // as the module declares them (not normalised)
    std::vector<std::string> symbols;  // exported symbols
    std::vector<std::string> softdeps; // modinfo softdep values ("pre: a post: b")
  };
  struct Builtin {
    std::string path;                  // kernel/.../name.ko as in modules.builtin
    std::vector<std::string> aliases;
  };

  [[nodiscard]] static absl::StatusOr<FakeModulesTree> Create(std::string version);
  FakeModulesTree(FakeModulesTree&&) noexcept;
  FakeModulesTree& operator=(FakeModulesTree&&) noexcept;
  ~FakeModulesTree();

  void AddModule(Module module) { modules_.push_back(std::move(module)); }
  void AddBuiltin(Builtin builtin) { builtins_.push_back(std::move(builtin)); }
  // A configuration file `name` in `dir` (e.g. "/etc/modprobe.d"), under the root.
  void AddConfig(std::string dir, std::string name, std::string text);
  // Writes everything; `binary` false writes only the text indexes.
  [[nodiscard]] absl::Status Write(bool binary = true) const;

  const std::string& root() const { return root_; }
  const std::string& version() const { return version_; }
  std::string modules_dir() const { return root_ + "/lib/modules/" + version_; }

 private:
  FakeModulesTree() = default;
  std::string root_;
  std::string version_;
  std::vector<Module> modules_;
  std::vector<Builtin> builtins_;
  struct Config {
    std::string dir;
    std::string name;
    std::string text;
  };
  std::vector<Config> configs_;
};

// Runs `argv` (kmod's modprobe, for tests that compare with it) and returns its stdout;
// stderr is discarded. Empty when it cannot be started.
[[nodiscard]] std::string RunCapture(const std::vector<std::string>& argv);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_FAKE_MODULES_TREE_H_
