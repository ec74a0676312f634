#include "hotplug/daemon/settling.h"

#include <algorithm>
#include <fstream>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "hotplug/daemon/netlink_drain.h"
#include "hotplug/probe/fs_probe.h"
#include "hotplug/probe/partition_table.h"
#include "io/ops.h"

namespace hotring::hotplug {
namespace {

constexpr size_t kMaxSettlers = 256;
// A requester that gave up is forgotten at its deadline (default: 10 minutes).
constexpr int64_t kDefaultForgetMs = 600'000;

}  // namespace

void Settling::Reply(const io::SocketAddress& to, const ControlReply& reply) {
  if (sender_ != nullptr) sender_->Reply(to, reply);
}

void Settling::Request(const ControlRequest& request, const io::SocketAddress& from) {
  for (const auto& [key, value] : request.options) {
    if (key == "FOR") {
      SettleFor(request, from);
      return;
    }
  }
  ControlReply reply;
  reply.cookie = request.cookie;
  // Idle without netlink: nothing can be pending that the daemon has not seen (datagrams on
  // the control socket are read in order, so a `send` before this request came first).
  if (flow_.Idle() && netlink_fd_ < 0) {
    flow_.BurstSettled();
    Reply(from, reply);
    return;
  }
  if (settlers_.size() >= kMaxSettlers) {
    reply.ok = false;
    reply.message = "too many settle requests waiting";
    Reply(from, reply);
    return;
  }
  // A retransmitted request replaces its earlier copy.
  settlers_.erase(std::remove_if(settlers_.begin(), settlers_.end(),
                                 [&](const AckTarget& t) {
                                   return SameAddress(t.address, from) &&
                                          t.cookie == request.cookie;
                                 }),
                  settlers_.end());
  settlers_.push_back(AckTarget{from, request.cookie});
  if (flow_.Idle()) Idle();  // else answered once idle, by Idle or by SettleNetlink
}

void Settling::Idle() {
  if (settlers_.empty()) return;
  if (netlink_fd_ < 0) {
    AnswerSettlers();
  } else if (!drain_check_running_) {
    drain_check_running_ = true;
    scope_.Spawn(SettleNetlink());
  }
}

void Settling::AnswerSettlers() {
  flow_.BurstSettled();
  std::vector<AckTarget> settlers = std::move(settlers_);
  settlers_.clear();
  for (const AckTarget& settler : settlers) {
    ControlReply reply;
    reply.cookie = settler.cookie;
    reply.message = "settled";
    Reply(settler.address, reply);
  }
}

// `hotring trigger --settle` writes to sysfs and then asks to settle: being idle is not enough,
// the uevents of the writes must have been read too (netlink_drain.h).
Task<void> Settling::SettleNetlink() {
  for (;;) {
    co_await DispatchCompletions(reactor_);
    if (settlers_.empty() || !flow_.Idle()) break;  // Idle() starts us again once idle
    if (!NetlinkUnread(netlink_fd_)) {
      AnswerSettlers();
      break;
    }
    // Unread uevents: the receive is re-armed (or waits for ring buffers); check again soon.
    (void)co_await io::Sleep(reactor_, absl::Milliseconds(1));
  }
  drain_check_running_ = false;
}

void Settling::Handled(Event&& event) {
  HandledDevice* handled = handled_.Record(std::move(event));
  if (handled != nullptr && !device_settlers_.empty()) OfferToDeviceSettlers(*handled);
}

void Settling::SettleFor(const ControlRequest& request, const io::SocketAddress& from) {
  ControlReply reply;
  reply.cookie = request.cookie;
  std::vector<SettleCondition> conditions;
  int64_t timeout_ms = kDefaultForgetMs;
  for (const auto& [key, value] : request.options) {
    if (key == "TIMEOUT_MS") {
      if (!absl::SimpleAtoi(value, &timeout_ms) || timeout_ms < 0) timeout_ms = kDefaultForgetMs;
      timeout_ms = std::min<int64_t>(timeout_ms, 86'400'000);
    }
    if (key != "FOR") continue;
    absl::StatusOr<SettleCondition> condition = ParseSettleCondition(value);
    if (!condition.ok() || conditions.size() == 32) {
      reply.ok = false;
      reply.message = condition.ok() ? "at most 32 FOR conditions"
                                     : std::string(condition.status().message());
      Reply(from, reply);
      return;
    }
    conditions.push_back(*std::move(condition));
  }
  // A retransmitted request replaces its earlier copy.
  device_settlers_.erase(std::remove_if(device_settlers_.begin(), device_settlers_.end(),
                                        [&](const DeviceSettler& s) {
                                          return SameAddress(s.target.address, from) &&
                                                 s.target.cookie == request.cookie;
                                        }),
                         device_settlers_.end());
  SettleWaiter waiter(std::move(conditions));
  handled_.ForEach([&](HandledDevice& device) {
    for (const SettleCondition& c : waiter.conditions()) {
      if (WantsProbe(device, c)) {
        Probe(device);
        break;
      }
    }
    return waiter.Offer(device);
  });
  if (waiter.done()) {
    SendSettled(from, request.cookie, waiter);
    return;
  }
  const MonoTime now = MonoNow();
  device_settlers_.erase(std::remove_if(device_settlers_.begin(), device_settlers_.end(),
                                        [&](const DeviceSettler& s) { return s.expires < now; }),
                         device_settlers_.end());
  if (device_settlers_.size() >= kMaxSettlers) {
    reply.ok = false;
    reply.message = "too many settle requests waiting";
    Reply(from, reply);
    return;
  }
  device_settlers_.push_back(DeviceSettler{AckTarget{from, request.cookie}, std::move(waiter),
                                           now + absl::Milliseconds(timeout_ms)});
}

void Settling::OfferToDeviceSettlers(HandledDevice& device) {
  for (const DeviceSettler& settler : device_settlers_) {
    bool probe = false;
    for (size_t i = 0; i < settler.waiter.conditions().size(); ++i) {
      probe |= !settler.waiter.met(i) && WantsProbe(device, settler.waiter.conditions()[i]);
    }
    if (probe) {
      Probe(device);
      break;
    }
  }
  std::vector<DeviceSettler> done;
  for (auto it = device_settlers_.begin(); it != device_settlers_.end();) {
    if (it->waiter.Offer(device)) {
      done.push_back(std::move(*it));
      it = device_settlers_.erase(it);
    } else {
      ++it;
    }
  }
  for (const DeviceSettler& settler : done) {
    SendSettled(settler.target.address, settler.target.cookie, settler.waiter);
  }
}

void Settling::SendSettled(const io::SocketAddress& to, uint32_t cookie,
                           const SettleWaiter& waiter) {
  ControlReply reply;
  reply.cookie = cookie;
  reply.message = "settled";
  // One `devname` per condition, in the request's order ("" for a device without a node):
  // root=LABEL=... mounts the device that matched.
  for (size_t i = 0; i < waiter.conditions().size(); ++i) {
    reply.fields.emplace_back("devname", waiter.met_by(i));
  }
  Reply(to, reply);
}

void Settling::Probe(HandledDevice& device) {
  device.probe = std::make_unique<ProbeResult>();
  const std::string path = absl::StrCat(options_.probe_dev_root, "/", device.properties.devname());
  // A few small preads on the reactor thread: done only for a waiting LABEL=/UUID= or
  // PARTUUID=/PARTLABEL= settle, once per handled block device.
  absl::StatusOr<std::optional<probe::FsIdentity>> fs = probe::ProbeFilesystemAt(path);
  if (!fs.ok()) {
    ProbeFailed(path, device, fs.status());
  } else if (fs->has_value()) {
    const probe::FsIdentity& found = device.probe->fs.emplace(**std::move(fs));
    LogInfo("probe %s: %s LABEL=%s UUID=%s", path, found.type, found.label, found.uuid);
  }
  ProbePartition(device);
}

void Settling::ProbeFailed(absl::string_view path, const HandledDevice& device,
                           const absl::Status& status) {
  ++probe_errors_;
  if (probe_errors_ <= 3) {
    LogWarning("probe %s (%s): %s", path, device.properties.devpath(), status.ToString());
  }
}

void Settling::ProbePartition(HandledDevice& device) {
  const std::optional<absl::string_view> partn_text = device.properties.Get("PARTN");
  int partn = 0;
  if (!partn_text.has_value() || !absl::SimpleAtoi(*partn_text, &partn) || partn <= 0) return;
  // The table is the parent disk's: the partition's DEVPATH is below the disk's.
  const absl::string_view devpath = device.properties.devpath();
  const size_t slash = devpath.rfind('/');
  const HandledDevice* disk =
      slash == absl::string_view::npos ? nullptr : handled_.Find(devpath.substr(0, slash));
  if (disk == nullptr || disk->properties.devname().empty()) return;
  const std::string path = absl::StrCat(options_.probe_dev_root, "/", disk->properties.devname());
  // 4 KiB-sector disks keep their GPT header in sector 1 of 4 KiB: the sysfs attribute says.
  uint32_t sector_size = 512;
  if (std::ifstream in(absl::StrCat(options_.sysfs_root, disk->properties.devpath(),
                                    "/queue/logical_block_size"));
      !(in >> sector_size) || (sector_size != 512 && sector_size != 4096)) {
    sector_size = 512;
  }
  absl::StatusOr<std::optional<probe::PartitionTable>> table =
      probe::ProbePartitionTableAt(path, sector_size);
  if (!table.ok()) {
    ProbeFailed(path, device, table.status());
    return;
  }
  if (!table->has_value()) return;
  for (const probe::PartitionEntry& entry : (*table)->entries) {
    if (entry.number != partn) continue;
    device.probe->partition = PartitionIdentity{entry.uuid, entry.name};
    LogInfo("probe %s: partition %d PARTUUID=%s PARTLABEL=%s", path, partn, entry.uuid,
            entry.name);
    return;
  }
}

void Settling::AppendStatus(std::vector<std::pair<std::string, std::string>>& fields) const {
  fields.emplace_back("probe_errors", absl::StrCat(probe_errors_));
  fields.emplace_back("devices_remembered", absl::StrCat(handled_.size()));
}

}  // namespace hotring::hotplug
