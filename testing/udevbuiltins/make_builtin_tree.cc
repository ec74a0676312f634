// Builds the builtins' test devices (builtin_devices.h) as a sysfs tree in a directory, for
// make_goldens.sh to bind over /sys when it runs Debian's udevadm on them. Prints one line per
// device: "NAME DEVPATH".
//
//   make_builtin_tree OUT_DIR      (OUT_DIR must not exist; its parent must)
#include <stdio.h>
#include <stdlib.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "testing/fake_sysfs.h"
#include "testing/udevbuiltins/builtin_devices.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_builtin_tree OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  const std::string parent = out.substr(0, out.rfind('/'));
  setenv("TEST_TMPDIR", parent.empty() ? "/" : parent.c_str(), 1);
  absl::StatusOr<hotring::testing::FakeSysfs> sys = hotring::testing::FakeSysfs::Create();
  if (!sys.ok()) {
    fprintf(stderr, "make_builtin_tree: %s\n", std::string(sys.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::vector<hotring::testing::CatalogDevice>> devices = hotring::testing::BuildBuiltinCatalog(*sys);
  if (!devices.ok()) {
    fprintf(stderr, "make_builtin_tree: %s\n", std::string(devices.status().message()).c_str());
    return 1;
  }
  if (rename(sys->root().c_str(), out.c_str()) != 0) {
    perror(absl::StrCat("make_builtin_tree: rename to ", out).c_str());
    return 1;
  }
  for (const auto& d : *devices) printf("%s %s\n", d.name.c_str(), d.devpath.c_str());
  return 0;
}
