// The fixture library for other projects' GoogleTest suites (`@hotring//testing:fixture`): one
// dependency brings the daemon on a private socket with settle and status (daemon_fixture.h), a
// fake sysfs (fake_sysfs.h), kernel-format uevent injection in a private network namespace
// (uevent_injector.h), and, here, a recording replayed with its manifest as data.
//
//   absl::StatusOr<Manifest> m = ReplayRecording({.recording = "board.rec",
//                                                 .config = "mdev.conf",
//                                                 .exec = {"my_handler"}});
//   const DevEntry* sda = FindDevEntry(*m, "sda");
//   EXPECT_EQ(sda->mode, 0660);
//   EXPECT_EQ(RunsOf(*m, "exec").size(), 3);
//
// Put "@hotring//:hotring" in the test's data (this library does) and nothing else needs
// installing: the binary is found in the runfiles, or at $HOTRING_BIN.
#ifndef HOTRING_TESTING_FIXTURE_H_
#define HOTRING_TESTING_FIXTURE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hotplug/replay/manifest.h"
#include "hotplug/replay/recording.h"
#include "testing/daemon_fixture.h"
#include "testing/fake_sysfs.h"
#include "testing/uevent_injector.h"

namespace hotring::testing {

using hotplug::replay::CommandRun;
using hotplug::replay::DevEntry;
using hotplug::replay::Manifest;

// What `hotring replay` is given (paths relative to the test's working directory are fine).
struct ReplaySpec {
  std::string recording;
  std::string config;                 // empty: no rules file (root:root 0660 for all nodes)
  std::string modules_root;           // empty: no modules
  std::string firmware_root;          // the board's /lib/firmware; empty: requests go missing
  std::vector<std::string> exec;      // --exec programs, in order
};

// Runs `hotring replay` and returns its manifest as data; an error with the replay's stderr
// when it failed.
absl::StatusOr<Manifest> ReplayRecording(const ReplaySpec& spec);

// The same, the manifest's text (what a golden file holds).
absl::StatusOr<std::string> ReplayRecordingText(const ReplaySpec& spec);

// A manifest file (a golden one, say) as data: for assertions worked out by hand beside the
// golden comparison, which catches any change but cannot tell a right result from a wrong one.
absl::StatusOr<Manifest> ReadManifest(const std::string& path);

// Writes a recording of `sysfs` (a FakeSysfs, say) to `out` with `hotring record`.
absl::Status RecordTree(const FakeSysfs& sysfs, const std::string& out,
                        absl::string_view kernel = "6.1.0-test");

// The entry at `path` under the dev root, or null.
[[nodiscard]] const DevEntry* FindDevEntry(const Manifest& manifest, absl::string_view path);
// The runs of one kind ("rule" or "exec"), in the order they ran.
[[nodiscard]] std::vector<const CommandRun*> RunsOf(const Manifest& manifest,
                                                    absl::string_view kind);
// A run's environment value for `key`, or "" when absent.
[[nodiscard]] std::string EnvOf(const CommandRun& run, absl::string_view key);

}  // namespace hotring::testing

#endif  // HOTRING_TESTING_FIXTURE_H_
