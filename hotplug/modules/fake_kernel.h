// FakeKernel: a Kernel for tests that records every load instead of calling finit_module, and
// lets a test decide what /sys/module holds, which loads fail with which errno, and when loads
// return (a gated load blocks on its pool thread until the test releases it, so a test can
// see several loads in flight at once).
#ifndef HOTRING_HOTPLUG_MODULES_FAKE_KERNEL_H_
#define HOTRING_HOTPLUG_MODULES_FAKE_KERNEL_H_

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hotplug/modules/loader.h"

namespace hotring::hotplug::modules {

// Owns the record of calls and the fake kernel state; thread-safe.
class FakeKernel final : public Kernel {
 public:
  struct Call {
    std::string kind;  // "load" or "install"
    std::string name;
    std::string path;     // load
    std::string options;  // load
    std::string command;  // install
    int nice = 0;         // load: the calling thread's nice value
  };

  // /sys/module/NAME exists from now on.
  void SetLoaded(const std::string& name);
  // Loads of `name` fail with `err` (EEXIST: the kernel says it is already there).
  void FailWith(const std::string& name, int err);
  void ClearFailure(const std::string& name);
  // From now on loads block until released (ReleaseAll, or Release of their name).
  void Gate();
  void Release(const std::string& name);
  void ReleaseAll();
  // Install commands are recorded, not run (as a dry run would).
  void TakeInstalls() { take_installs_ = true; }

  // Functional bounds only: false if it did not happen within 20 s.
  bool WaitInFlight(size_t n);
  bool WaitStarted(size_t n);

  [[nodiscard]] std::vector<Call> calls() const;
  // Names of load/install calls in the order they started.
  [[nodiscard]] std::vector<std::string> started() const;
  [[nodiscard]] size_t peak_in_flight() const;
  [[nodiscard]] size_t is_loaded_calls() const;

  bool IsLoaded(const std::string& name) override;
  absl::StatusOr<LoadResult> Load(const ModuleToLoad& module) override;
  bool TakeInstall(const ModuleToLoad& module, const std::string& command) override;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Call> calls_;
  absl::flat_hash_set<std::string> loaded_;
  absl::flat_hash_map<std::string, int> failures_;
  absl::flat_hash_set<std::string> released_;
  bool gated_ = false;
  bool take_installs_ = false;
  size_t in_flight_ = 0;
  size_t peak_ = 0;
  size_t is_loaded_calls_ = 0;
};

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_FAKE_KERNEL_H_
