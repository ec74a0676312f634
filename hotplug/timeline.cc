#include "hotplug/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"

namespace hotring::hotplug {
namespace {

// A file write happens once this much is buffered, or when the daemon is idle.
constexpr size_t kFlushBytes = 64 * 1024;

absl::string_view OrDash(absl::string_view s) { return s.empty() ? "-" : s; }

std::string Seqnum(const Event& event) {
  return event.seqnum.has_value() ? absl::StrCat(*event.seqnum) : "-";
}

}  // namespace

absl::Status TimelineRecorder::OpenFile(const std::string& path) {
  file_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!file_.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  absl::StrAppend(&buffer_, kTimelineHeader, "\n");
  return Flush();
}

int64_t TimelineRecorder::Micros(MonoTime t) const {
  return absl::ToInt64Microseconds(Since(origin_, t));
}

void TimelineRecorder::AddLine(std::string line) {
  ++total_;
  if (file_.valid()) {
    absl::StrAppend(&buffer_, line, "\n");
    if (buffer_.size() >= kFlushBytes) (void)Flush();
  }
  if (keep_ == 0) return;
  if (kept_.size() == keep_) kept_.pop_front();
  kept_.push_back(std::move(line));
}

std::string TimelineRecorder::ReceivedLine(MonoTime t, const Event& event) const {
  // ACTION and DEVPATH are validated (no spaces in ACTION; DEVPATH is the last field, so a
  // space in it is harmless); SUBSYSTEM is free text from the sender: spaces become '_'.
  std::string subsystem(OrDash(event.subsystem));
  for (char& c : subsystem) {
    if (c == ' ' || c == '\t') c = '_';
  }
  return absl::StrCat("R ", Micros(t), " ", Seqnum(event), " ", event.action, " ", subsystem,
                      " ", event.devpath);
}

void TimelineRecorder::Released(MonoTime t, uint64_t id, const Event& event) {
  if (!enabled()) return;
  AddLine(absl::StrCat("L ", Micros(t), " ", id, " ", Seqnum(event), " ", event.devpath));
}

void TimelineRecorder::Started(MonoTime t, uint64_t id) {
  if (!enabled()) return;
  AddLine(absl::StrCat("S ", Micros(t), " ", id));
}

void TimelineRecorder::Handled(MonoTime t, uint64_t id, absl::string_view result) {
  if (!enabled()) return;
  AddLine(absl::StrCat("H ", Micros(t), " ", id, " ", result));
}

void TimelineRecorder::Gap(MonoTime t, uint64_t first, uint64_t last, absl::string_view why) {
  if (!enabled()) return;
  AddLine(absl::StrCat("G ", Micros(t), " ", first, " ", last, " ", why));
}

void TimelineRecorder::Step(MonoTime t, const Event& event, absl::Duration took,
                            absl::string_view what, bool ok) {
  if (!enabled()) return;
  std::string word(OrDash(what.substr(0, 128)));
  for (char& c : word) {
    if (c <= ' ' || c > '~') c = '_';
  }
  AddLine(absl::StrCat("M ", Micros(t), " ", Seqnum(event), " ", absl::ToInt64Microseconds(took),
                       " ", word, " ", ok ? "ok" : "error"));
}

absl::Status TimelineRecorder::Flush() {
  if (!file_.valid() || buffer_.empty()) return absl::OkStatus();
  // A blocking write from the reactor thread: the file is meant for a tmpfs (/run) or a local
  // disk, written in 64 KiB pieces or when idle, so it never waits on anything slow.
  absl::string_view rest = buffer_;
  while (!rest.empty()) {
    const ssize_t n = ::write(file_.get(), rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ++write_errors_;
      const absl::Status error = ErrnoStatus("write(timeline)");
      if (write_errors_ == 1) LogError("timeline: %s; later lines are lost", error.ToString());
      buffer_.clear();
      return error;
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  buffer_.clear();
  return absl::OkStatus();
}

uint64_t TimelineRecorder::Lines(uint64_t from, size_t max_bytes,
                                 std::vector<std::string>& out) const {
  uint64_t n = std::max(from, first_kept());
  size_t bytes = 0;
  for (; n < total_; ++n) {
    const std::string& line = kept_[n - first_kept()];
    if (bytes + line.size() + 8 > max_bytes && bytes > 0) break;
    bytes += line.size() + 8;
    out.push_back(line);
  }
  return n;
}

}  // namespace hotring::hotplug
