#include "hotplug/modules/fake_kernel.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace hotring::hotplug::modules {

void FakeKernel::SetLoaded(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  loaded_.insert(name);
}

void FakeKernel::FailWith(const std::string& name, int err) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_[name] = err;
}

void FakeKernel::ClearFailure(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  failures_.erase(name);
}

void FakeKernel::Gate() {
  std::lock_guard<std::mutex> lock(mutex_);
  gated_ = true;
}

void FakeKernel::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  released_.insert(name);
  changed_.notify_all();
}

void FakeKernel::ReleaseAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  gated_ = false;
  changed_.notify_all();
}

bool FakeKernel::WaitInFlight(size_t n) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return in_flight_ >= n; });
}

bool FakeKernel::WaitStarted(size_t n) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return calls_.size() >= n; });
}

std::vector<FakeKernel::Call> FakeKernel::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

std::vector<std::string> FakeKernel::started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const Call& c : calls_) names.push_back(c.name);
  return names;
}

size_t FakeKernel::peak_in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

size_t FakeKernel::is_loaded_calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return is_loaded_calls_;
}

bool FakeKernel::IsLoaded(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++is_loaded_calls_;
  return loaded_.contains(name);
}

absl::StatusOr<Kernel::LoadResult> FakeKernel::Load(const ModuleToLoad& module) {
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
  std::unique_lock<std::mutex> lock(mutex_);
  calls_.push_back(Call{.kind = "load", .name = module.name, .path = module.path,
                        .options = module.options, .nice = nice});
  ++in_flight_;
  peak_ = std::max(peak_, in_flight_);
  changed_.notify_all();
  changed_.wait(lock, [&] { return !gated_ || released_.contains(module.name); });
  --in_flight_;
  changed_.notify_all();
  if (const auto it = failures_.find(module.name); it != failures_.end()) {
    if (it->second == EEXIST) return LoadResult::kAlreadyLoaded;
    return ErrnoStatus(absl::StrCat("finit_module(", module.path, ")"), it->second);
  }
  loaded_.insert(module.name);
  return LoadResult::kLoaded;
}

bool FakeKernel::TakeInstall(const ModuleToLoad& module, const std::string& command) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!take_installs_) return false;
  calls_.push_back(Call{.kind = "install", .name = module.name, .command = command});
  loaded_.insert(module.name);
  changed_.notify_all();
  return true;
}

}  // namespace hotring::hotplug::modules
