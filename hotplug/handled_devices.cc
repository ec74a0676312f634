#include "hotplug/handled_devices.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hotring::hotplug {

absl::StatusOr<SettleCondition> ParseSettleCondition(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--for wants KEY=VALUE (DEVNAME=vda, SUBSYSTEM=net, LABEL=root), not '",
                     text, "'"));
  }
  SettleCondition condition{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  for (const char c : condition.key) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat("--for: bad key '", condition.key, "'"));
    }
  }
  if (condition.key == "DEVNAME" && absl::StartsWith(condition.value, "/dev/")) {
    condition.value.erase(0, 5);
  }
  return condition;
}

namespace {

std::optional<absl::string_view> FsProperty(const Event& event, absl::string_view key) {
  return event.Get(key == "LABEL" ? "ID_FS_LABEL" : "ID_FS_UUID");
}

}  // namespace

bool Satisfies(const HandledDevice& device, const SettleCondition& condition) {
  if (condition.names_filesystem()) {
    if (const std::optional<absl::string_view> v = FsProperty(device.event, condition.key)) {
      return *v == condition.value;
    }
    if (!device.fs.has_value()) return false;
    const std::string& v = condition.key == "LABEL" ? device.fs->label : device.fs->uuid;
    // blkid prints vfat ids in upper case and the rest in lower case; people type either.
    return !v.empty() && (condition.key == "UUID" ? absl::EqualsIgnoreCase(v, condition.value)
                                                   : v == condition.value);
  }
  const std::optional<absl::string_view> v = device.event.Get(condition.key);
  return v.has_value() && *v == condition.value;
}

bool WantsProbe(const HandledDevice& device, const SettleCondition& condition) {
  return condition.names_filesystem() && !device.probed && device.event.subsystem == "block" &&
         !device.event.devname.empty() && !FsProperty(device.event, condition.key).has_value();
}

HandledDevice* HandledDevices::Record(Event&& event) {
  if (event.action == "remove") {
    devices_.erase(event.devpath);
    return nullptr;
  }
  const uint64_t generation = next_generation_++;
  order_.emplace_back(event.devpath, generation);
  HandledDevice& device = devices_[event.devpath];
  device.event = std::move(event);
  device.probed = false;
  device.fs.reset();
  device.generation = generation;
  while (devices_.size() > max_devices_ && !order_.empty()) {
    auto [devpath, gen] = std::move(order_.front());
    order_.pop_front();
    if (auto it = devices_.find(devpath); it != devices_.end() && it->second.generation == gen) {
      devices_.erase(it);
    }
  }
  if (order_.size() > 2 * max_devices_ + 16) {
    // Mostly stale pairs (devices handled again, or removed): keep only the live ones.
    std::deque<std::pair<std::string, uint64_t>> live;
    for (auto& entry : order_) {
      if (auto it = devices_.find(entry.first);
          it != devices_.end() && it->second.generation == entry.second) {
        live.push_back(std::move(entry));
      }
    }
    order_ = std::move(live);
  }
  // `devices_` may have rehashed while evicting: look the entry up again.
  return &devices_.find(order_.back().first)->second;
}

void HandledDevices::ForEach(absl::FunctionRef<bool(HandledDevice&)> visit) {
  for (auto& [devpath, device] : devices_) {
    if (visit(device)) return;
  }
}

bool SettleWaiter::Offer(const HandledDevice& device) {
  for (size_t i = 0; i < conditions_.size(); ++i) {
    if (!met_[i] && Satisfies(device, conditions_[i])) met_[i] = true;
  }
  return done();
}

bool SettleWaiter::done() const {
  for (const bool m : met_) {
    if (!m) return false;
  }
  return true;
}

std::string SettleWaiter::Unmet() const {
  std::vector<std::string> unmet;
  for (size_t i = 0; i < conditions_.size(); ++i) {
    if (!met_[i]) unmet.push_back(conditions_[i].ToString());
  }
  return absl::StrJoin(unmet, ", ");
}

}  // namespace hotring::hotplug
