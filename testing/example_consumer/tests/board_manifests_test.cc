// What the boards' golden manifests must say, worked out by hand from each board's mdev.conf,
// its recording (the devices' MAJOR:MINOR, its /etc/group) and its modules.dep. The goldens are
// rewritten by `bazel run //boards/...:*_test.update` from what the replay did, so the device
// tests catch a change, not a wrong result: a golden regenerated from a wrong replay fails here.
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "testing/fixture.h"

namespace {

using hotring::testing::DevEntry;
using hotring::testing::FindDevEntry;
using hotring::testing::Manifest;
using hotring::testing::ReadManifest;

void ExpectNode(const Manifest& m, const std::string& path, DevEntry::Type type, uint32_t major,
                uint32_t minor, uint32_t gid, uint32_t mode) {
  const DevEntry* e = FindDevEntry(m, path);
  ASSERT_NE(e, nullptr) << path;
  EXPECT_EQ(e->type, type) << path;
  EXPECT_EQ(e->major, major) << path;
  EXPECT_EQ(e->minor, minor) << path;
  EXPECT_EQ(e->uid, 0u) << path;  // every rule here says root
  EXPECT_EQ(e->gid, gid) << path;
  EXPECT_EQ(e->mode, mode) << path;
}

// Where the module `name` comes in the load order, or -1.
int LoadPosition(const Manifest& m, const std::string& name) {
  const auto it = std::find_if(m.modules.begin(), m.modules.end(), [&](const std::string& line) {
    return line.rfind("module " + name + " ", 0) == 0;
  });
  return it == m.modules.end() ? -1 : static_cast<int>(it - m.modules.begin());
}

TEST(HostManifest, NodesHaveTheOwnersAndModesOfTheirRules) {
  absl::StatusOr<Manifest> m = ReadManifest("boards/host/host.manifest");
  ASSERT_TRUE(m.ok()) << m.status();
  // `vd[a-z] root:disk 0660 @echo disk $MDEV`; vda is 254:0, disk is group 6 (host.rec).
  ExpectNode(*m, "vda", DevEntry::Type::kBlock, 254, 0, 6, 0660);
  // `tty[0-9]+ root:tty 0620`; tty is group 5.
  ExpectNode(*m, "tty1", DevEntry::Type::kChar, 4, 1, 5, 0620);
  // `loop[0-9]+ root:disk 0660 =loop/`: moved into loop/, nothing left where it was.
  ExpectNode(*m, "loop/loop0", DevEntry::Type::kBlock, 7, 0, 6, 0660);
  EXPECT_EQ(FindDevEntry(*m, "loop0"), nullptr);
}

TEST(QemuManifest, NodesHaveTheOwnersAndModesOfTheirRules) {
  absl::StatusOr<Manifest> m = ReadManifest("boards/qemu/qemu.manifest");
  ASSERT_TRUE(m.ok()) << m.status();
  // `vd[a-z] root:disk 0660 >disk/root`: the node moves to disk/root, vda links to it.
  ExpectNode(*m, "disk/root", DevEntry::Type::kBlock, 254, 0, 6, 0660);
  const DevEntry* vda = FindDevEntry(*m, "vda");
  ASSERT_NE(vda, nullptr);
  EXPECT_EQ(vda->type, DevEntry::Type::kLink);
  EXPECT_EQ(vda->target, "disk/root");
  // `input/mice root:input 0640`; input is group 101 on this board (qemu.rec).
  ExpectNode(*m, "input/mice", DevEntry::Type::kChar, 13, 63, 101, 0640);
  // input/mouse0 matches no rule: busybox's default, root:root 0660.
  ExpectNode(*m, "input/mouse0", DevEntry::Type::kChar, 13, 32, 0, 0660);
}

TEST(QemuManifest, ModulesLoadAfterWhatModulesDepSaysTheyNeed) {
  absl::StatusOr<Manifest> m = ReadManifest("boards/qemu/qemu.manifest");
  ASSERT_TRUE(m.ok()) << m.status();
  // modules.dep: virtio_net.ko: net_failover.ko failover.ko virtio.ko virtio_ring.ko
  //              net_failover.ko: failover.ko
  const int virtio_net = LoadPosition(*m, "virtio_net");
  const int net_failover = LoadPosition(*m, "net_failover");
  const int failover = LoadPosition(*m, "failover");
  ASSERT_GE(failover, 0);
  EXPECT_LT(failover, net_failover);
  EXPECT_LT(net_failover, virtio_net);
  for (const char* dep : {"virtio", "virtio_ring"}) {
    const int at = LoadPosition(*m, dep);
    EXPECT_GE(at, 0) << dep;
    EXPECT_LT(at, virtio_net) << dep;
  }
}

}  // namespace
