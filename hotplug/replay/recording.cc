#include "hotplug/replay/recording.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "hotplug/event_parser.h"
#include "hotplug/replay/line_format.h"

namespace hotring::hotplug::replay {
namespace {

// An event has at most 64 variables (event_parser.h); one more field for the keyword.
constexpr size_t kMaxFields = 80;

bool SafeComponents(absl::string_view path) {
  for (const absl::string_view part : absl::StrSplit(path.substr(1), '/')) {
    if (!IsSafeName(part)) return false;
  }
  return true;
}

}  // namespace

bool IsSafeDriverPath(absl::string_view path) {
  if (!(absl::StartsWith(path, "/bus/") || absl::StartsWith(path, "/module/")) ||
      path.size() >= 1024) {
    return false;
  }
  // Driver names may hold blanks ("i8042 kbd"): any printable component but "." and "..".
  for (const absl::string_view part : absl::StrSplit(path.substr(1), '/')) {
    if (part.empty() || part == "." || part == ".." || part.size() > 255) return false;
    for (const char c : part) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    }
  }
  return true;
}

bool IsSafeName(absl::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == ':' || c == '+' || c == '@' || c == '-' ||
                    c == ',' || c == '!';
    if (!ok) return false;
  }
  return true;
}

bool IsSafeDevpath(absl::string_view devpath) {
  return absl::StartsWith(devpath, "/devices/") && devpath.size() < 4096 &&
         SafeComponents(devpath);
}

absl::string_view SubsystemKindName(SubsystemKind kind) {
  switch (kind) {
    case SubsystemKind::kNone: return "none";
    case SubsystemKind::kClass: return "class";
    case SubsystemKind::kBus: return "bus";
  }
  return "none";
}

std::string FormatRecording(const Recording& recording) {
  std::string out = absl::StrCat(kRecordingHeader, "\n");
  absl::StrAppend(&out, "kernel ", QuoteField(recording.kernel), "\n");
  for (const std::string& m : recording.loaded_modules) {
    absl::StrAppend(&out, "loaded ", QuoteField(m), "\n");
  }
  for (const std::string& line : recording.passwd) {
    absl::StrAppend(&out, "passwd ", QuoteField(line), "\n");
  }
  for (const std::string& line : recording.group) {
    absl::StrAppend(&out, "group ", QuoteField(line), "\n");
  }
  for (const RecordedDevice& d : recording.devices) {
    absl::StrAppend(&out, "device ", QuoteField(d.devpath));
    if (d.kind != SubsystemKind::kNone) {
      absl::StrAppend(&out, " ", SubsystemKindName(d.kind), " ", QuoteField(d.subsystem));
    }
    out += "\n";
    for (const auto& [name, content] : d.attributes) {
      absl::StrAppend(&out, "attr ", QuoteField(d.devpath), " ", QuoteField(name), " ",
                      QuoteField(content), "\n");
    }
    if (!d.driver.empty()) {
      absl::StrAppend(&out, "driver ", QuoteField(d.devpath), " ", QuoteField(d.driver), "\n");
    }
  }
  for (const RecordedEvent& e : recording.events) {
    out += "event";
    for (const auto& [key, value] : e) absl::StrAppend(&out, " ", QuoteField(key + "=" + value));
    out += "\n";
  }
  return out;
}

namespace {

// What is wrong with one line of a recording; ParseRecording puts the line's number before it.
absl::Status LineError(absl::string_view what) { return absl::InvalidArgumentError(what); }

// Whether a line has `count` fields, its keyword (f[0]) included.
absl::Status WantFields(const std::vector<std::string>& f, size_t count) {
  if (f.size() == count) return absl::OkStatus();
  return LineError(absl::StrCat(f[0], " takes ", count - 1, " fields, not ", f.size() - 1));
}

// Reads a recording one line at a time. Owns the recording so far and what later lines are
// checked against: where each device is, by devpath, and whether the kernel line was seen.
class RecordingParser {
 public:
  // One line's fields, its keyword first (the values may be moved from). An error's message says
  // what is wrong with the line.
  absl::Status Line(std::vector<std::string>& f) {
    const std::string& keyword = f[0];
    if (keyword == "kernel") return Kernel(f);
    if (keyword == "loaded") {
      if (absl::Status s = WantFields(f, 2); !s.ok()) return s;
      if (!IsSafeName(f[1])) return LineError("bad module name");
      recording_.loaded_modules.push_back(f[1]);
      return absl::OkStatus();
    }
    if (keyword == "passwd" || keyword == "group") {
      if (absl::Status s = WantFields(f, 2); !s.ok()) return s;
      if (f[1].find('\n') != std::string::npos) return LineError("a newline inside an entry");
      (keyword == "passwd" ? recording_.passwd : recording_.group).push_back(f[1]);
      return absl::OkStatus();
    }
    if (keyword == "device") return Device(f);
    if (keyword == "attr" || keyword == "driver") return AttributeOrDriver(f);
    if (keyword == "event") return AddEvent(f);
    return LineError(absl::StrCat("unknown keyword ", QuoteField(keyword)));
  }

  // The recording, once every line is read.
  absl::StatusOr<Recording> Finish() && {
    if (!have_kernel_) return absl::InvalidArgumentError("no kernel line");
    return std::move(recording_);
  }

 private:
  absl::Status Kernel(const std::vector<std::string>& f) {
    if (absl::Status s = WantFields(f, 2); !s.ok()) return s;
    if (have_kernel_) return LineError("second kernel line");
    if (f[1].empty() || f[1].size() > 64 || f[1].find('/') != std::string::npos ||
        !IsSafeName(f[1])) {
      return LineError("kernel release must be a name like 6.1.0-13-amd64");
    }
    recording_.kernel = f[1];
    have_kernel_ = true;
    return absl::OkStatus();
  }

  absl::Status Device(const std::vector<std::string>& f) {
    if (f.size() != 2 && f.size() != 4) {
      return LineError("device takes DEVPATH [class|bus SUBSYSTEM]");
    }
    if (!IsSafeDevpath(f[1])) return LineError(absl::StrCat("bad devpath ", QuoteField(f[1])));
    if (device_index_.contains(f[1])) return LineError(absl::StrCat("device ", f[1], " twice"));
    if (recording_.devices.size() == kMaxRecordedDevices) {
      return LineError(absl::StrCat("more than ", kMaxRecordedDevices, " devices"));
    }
    RecordedDevice device;
    device.devpath = f[1];
    if (f.size() == 4) {
      if (f[2] == "class") {
        device.kind = SubsystemKind::kClass;
      } else if (f[2] == "bus") {
        device.kind = SubsystemKind::kBus;
      } else {
        return LineError(
            absl::StrCat("subsystem kind must be class or bus, not ", QuoteField(f[2])));
      }
      if (!IsSafeName(f[3])) return LineError("bad subsystem name");
      device.subsystem = f[3];
    }
    device_index_[device.devpath] = recording_.devices.size();
    recording_.devices.push_back(std::move(device));
    return absl::OkStatus();
  }

  absl::Status AttributeOrDriver(std::vector<std::string>& f) {
    const std::string& keyword = f[0];
    if (absl::Status s = WantFields(f, keyword == "attr" ? 4 : 3); !s.ok()) return s;
    const auto it = device_index_.find(f[1]);
    if (it == device_index_.end()) {
      return LineError(absl::StrCat(keyword, " before its device line: ", QuoteField(f[1])));
    }
    RecordedDevice& device = recording_.devices[it->second];
    if (keyword == "driver") {
      if (!device.driver.empty()) return LineError("second driver of one device");
      if (!IsSafeDriverPath(f[2])) {
        return LineError(absl::StrCat("driver must be /bus/... or /module/..., not ",
                                      QuoteField(f[2])));
      }
      device.driver = f[2];
      return absl::OkStatus();
    }
    if (!IsSafeName(f[2]) || f[2] == "subsystem" || f[2] == "driver") {
      return LineError(absl::StrCat("bad attribute name ", QuoteField(f[2])));
    }
    if (f[3].size() > kMaxAttributeBytes) return LineError("attribute longer than 8 KiB");
    if (device.attributes.size() == kMaxDeviceAttributes) {
      return LineError(absl::StrCat("more than ", kMaxDeviceAttributes, " attributes"));
    }
    for (const auto& [name, content] : device.attributes) {
      if (name == f[2]) return LineError(absl::StrCat("attribute ", f[2], " twice"));
    }
    device.attributes.emplace_back(std::move(f[2]), std::move(f[3]));
    return absl::OkStatus();
  }

  absl::Status AddEvent(const std::vector<std::string>& f) {
    if (recording_.events.size() == kMaxRecordedEvents) {
      return LineError(absl::StrCat("more than ", kMaxRecordedEvents, " events"));
    }
    EnvVars env;
    for (size_t i = 1; i < f.size(); ++i) {
      const size_t eq = f[i].find('=');
      if (eq == std::string::npos || eq == 0) {
        return LineError(absl::StrCat("event field ", QuoteField(f[i]), " is not KEY=VALUE"));
      }
      env.emplace_back(f[i].substr(0, eq), f[i].substr(eq + 1));
    }
    // The daemon's own validation: what it would drop cannot be replayed.
    absl::StatusOr<Event> event = EventFromEnv(env, EventSource::kSend);
    if (!event.ok()) return LineError(absl::StrCat("bad event: ", event.status().message()));
    if (!event->seqnum.has_value()) return LineError("event without SEQNUM");
    if (!IsSafeDevpath(event->devpath)) return LineError("event DEVPATH outside /devices");
    recording_.events.push_back(std::move(env));
    return absl::OkStatus();
  }

  Recording recording_;
  absl::flat_hash_map<std::string, size_t> device_index_;
  bool have_kernel_ = false;
};

}  // namespace

absl::StatusOr<Recording> ParseRecording(absl::string_view text) {
  if (text.size() > kMaxRecordingBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("recording of ", text.size(), " bytes (at most ", kMaxRecordingBytes, ")"));
  }
  const std::vector<absl::string_view> lines = SplitLines(text);
  if (lines.empty() || lines[0] != kRecordingHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("1: not a recording (the first line must be '", kRecordingHeader, "')"));
  }
  RecordingParser parser;
  for (size_t n = 1; n < lines.size(); ++n) {
    const absl::string_view line = lines[n];
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(n + 1, ": ", what));
    };
    if (line.size() > kMaxLineBytes) return error("line too long");
    absl::string_view trimmed = line;
    while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) {
      trimmed.remove_prefix(1);
    }
    if (trimmed.empty() || trimmed.front() == '#') continue;
    absl::StatusOr<std::vector<std::string>> split = SplitFields(line, kMaxFields);
    if (!split.ok()) return error(split.status().message());
    if (absl::Status s = parser.Line(*split); !s.ok()) return error(s.message());
  }
  return std::move(parser).Finish();
}

std::vector<FirmwareRequest> FirmwareRequests(const Recording& recording) {
  std::vector<FirmwareRequest> out;
  for (const RecordedEvent& event : recording.events) {
    FirmwareRequest request;
    bool add = false;
    for (const auto& [key, value] : event) {
      if (key == "ACTION") add = value == "add";
      if (key == "DEVPATH") request.devpath = value;
      if (key == "FIRMWARE") request.name = value;
    }
    if (add && !request.name.empty() && !request.devpath.empty()) out.push_back(std::move(request));
  }
  return out;
}

}  // namespace hotring::hotplug::replay
