#include "hotplug/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "core/log.h"
#include "core/status.h"

namespace hotring::hotplug {
namespace {

// A file write happens once this much is buffered, or when the daemon is idle.
constexpr size_t kFlushBytes = 64 * 1024;

using Kind = TimelineRecord::Kind;

uint64_t SeqnumField(const Event& event) { return event.seqnum.has_value() ? *event.seqnum + 1 : 0; }

void AppendSeqnum(std::string& out, uint64_t field) {
  if (field == 0) {
    out += '-';
  } else {
    absl::StrAppend(&out, field - 1);
  }
}

// "ACTION SUBSYSTEM DEVPATH". ACTION is validated (no spaces) and DEVPATH comes last, so only
// SUBSYSTEM, free text from the sender, needs its blanks replaced.
std::string ReceivedText(const Event& event) {
  std::string text = absl::StrCat(event.action, " ", event.subsystem.empty() ? "-" : "",
                                  event.subsystem, " ", event.devpath);
  for (size_t i = event.action.size() + 1; i < event.action.size() + 1 + event.subsystem.size();
       ++i) {
    if (text[i] == ' ' || text[i] == '\t') text[i] = '_';
  }
  return text;
}

// The DEVPATH of a ReceivedText: after the second space.
absl::string_view DevpathOf(absl::string_view text) {
  const size_t first = text.find(' ');
  const size_t second = text.find(' ', first + 1);
  return second == absl::string_view::npos ? absl::string_view() : text.substr(second + 1);
}

void PutNumber(std::deque<char>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

using KeptIterator = std::deque<char>::const_iterator;

uint64_t GetNumber(KeptIterator& at) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(*at++);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  return v;
}

// Unpacks the kept record at `at` (into `r`, its text reused) and moves `at` past it.
void Unpack(KeptIterator& at, TimelineRecord& r) {
  r.kind = static_cast<Kind>(*at++);
  r.t_us = static_cast<int64_t>(GetNumber(at));
  r.a = GetNumber(at);
  r.b = GetNumber(at);
  const size_t length = GetNumber(at);
  r.text.assign(at, at + static_cast<std::ptrdiff_t>(length));
  at += static_cast<std::ptrdiff_t>(length);
}

// The bytes of the kept record at `at`.
size_t PackedSize(KeptIterator at) {
  const KeptIterator start = at;
  ++at;
  for (int i = 0; i < 3; ++i) (void)GetNumber(at);
  const size_t length = GetNumber(at);
  return static_cast<size_t>(at - start) + length;
}

}  // namespace

void AppendTimelineLines(const TimelineRecord& r, std::string& out) {
  switch (r.kind) {
    case Kind::kReceived:
    case Kind::kReceivedAndReleased:
      absl::StrAppend(&out, "R ", r.t_us, " ");
      AppendSeqnum(out, r.a);
      absl::StrAppend(&out, " ", r.text, "\n");
      if (r.kind == Kind::kReceivedAndReleased) {
        absl::StrAppend(&out, "L ", r.t_us, " ", r.b, " ");
        AppendSeqnum(out, r.a);
        absl::StrAppend(&out, " ", DevpathOf(r.text), "\n");
      }
      return;
    case Kind::kReleased:
      absl::StrAppend(&out, "L ", r.t_us, " ", r.b, " ");
      AppendSeqnum(out, r.a);
      absl::StrAppend(&out, " ", r.text, "\n");
      return;
    case Kind::kStarted:
      absl::StrAppend(&out, "S ", r.t_us, " ", r.b, "\n");
      return;
    case Kind::kHandled:
      absl::StrAppend(&out, "H ", r.t_us, " ", r.b, " ", r.text, "\n");
      return;
    case Kind::kGap:
      absl::StrAppend(&out, "G ", r.t_us, " ", r.a, " ", r.b, " ", r.text, "\n");
      return;
    case Kind::kStep:
      absl::StrAppend(&out, "M ", r.t_us, " ");
      AppendSeqnum(out, r.a);
      absl::StrAppend(&out, " ", r.b, " ", r.text, "\n");
      return;
  }
}

absl::Status TimelineRecorder::OpenFile(const std::string& path) {
  file_ = UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!file_.valid()) return ErrnoStatus(absl::StrCat("open(", path, ")"));
  absl::StrAppend(&buffer_, kTimelineHeader, "\n");
  return Flush();
}

int64_t TimelineRecorder::Micros(MonoTime t) const {
  return absl::ToInt64Microseconds(Since(origin_, t));
}

void TimelineRecorder::Add(TimelineRecord record) {
  if (!enabled()) return;
  ++total_;
  if (file_.valid()) {
    AppendTimelineLines(record, buffer_);
    if (buffer_.size() >= kFlushBytes) (void)Flush();
  }
  if (keep_ == 0) return;
  Keep(record);
}

void TimelineRecorder::Keep(const TimelineRecord& record) {
  if (kept_count_ == keep_) {
    kept_.erase(kept_.begin(),
                kept_.begin() + static_cast<std::ptrdiff_t>(PackedSize(kept_.begin())));
    --kept_count_;
  }
  kept_.push_back(static_cast<char>(record.kind));
  PutNumber(kept_, static_cast<uint64_t>(record.t_us));
  PutNumber(kept_, record.a);
  PutNumber(kept_, record.b);
  PutNumber(kept_, record.text.size());
  kept_.insert(kept_.end(), record.text.begin(), record.text.end());
  ++kept_count_;
}

TimelineRecord TimelineRecorder::ReceivedRecord(MonoTime t, const Event& event) const {
  if (!enabled()) return {};
  return TimelineRecord{Kind::kReceived, Micros(t), SeqnumField(event), 0, ReceivedText(event)};
}

void TimelineRecorder::ReceivedAndReleased(MonoTime t, uint64_t id, const Event& event) {
  if (!enabled()) return;
  Add(TimelineRecord{Kind::kReceivedAndReleased, Micros(t), SeqnumField(event), id,
                     ReceivedText(event)});
}

void TimelineRecorder::Released(MonoTime t, uint64_t id, const Event& event) {
  if (!enabled()) return;
  Add(TimelineRecord{Kind::kReleased, Micros(t), SeqnumField(event), id, event.devpath});
}

void TimelineRecorder::Started(MonoTime t, uint64_t id) {
  if (!enabled()) return;
  Add(TimelineRecord{Kind::kStarted, Micros(t), 0, id, {}});
}

void TimelineRecorder::Handled(MonoTime t, uint64_t id, absl::string_view result) {
  if (!enabled()) return;
  Add(TimelineRecord{Kind::kHandled, Micros(t), 0, id, std::string(result)});
}

void TimelineRecorder::Gap(MonoTime t, uint64_t first, uint64_t last, absl::string_view why) {
  if (!enabled()) return;
  Add(TimelineRecord{Kind::kGap, Micros(t), first, last, std::string(why)});
}

void TimelineRecorder::Step(MonoTime t, const Event& event, absl::Duration took,
                            absl::string_view what, bool ok) {
  if (!enabled()) return;
  std::string text(what.empty() ? "-" : what.substr(0, 128));
  for (char& c : text) {
    if (c <= ' ' || c > '~') c = '_';
  }
  absl::StrAppend(&text, ok ? " ok" : " error");
  Add(TimelineRecord{Kind::kStep, Micros(t), SeqnumField(event),
                     static_cast<uint64_t>(std::max<int64_t>(0, absl::ToInt64Microseconds(took))),
                     std::move(text)});
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

uint64_t TimelineRecorder::Lines(uint64_t from, size_t max_bytes, std::vector<std::string>& out,
                                 size_t max_lines, size_t max_line, size_t overhead) const {
  if (from >= total_) return from;
  uint64_t n = first_kept();
  KeptIterator at = kept_.begin();
  for (; n < from && n < total_; ++n) at += static_cast<std::ptrdiff_t>(PackedSize(at));
  size_t bytes = 0;
  size_t lines = 0;
  std::string text;
  TimelineRecord record;
  std::vector<absl::string_view> split;
  for (; n < total_; ++n) {
    text.clear();
    Unpack(at, record);
    AppendTimelineLines(record, text);
    split.clear();
    size_t need = 0;
    for (absl::string_view rest = text; !rest.empty();) {
      const size_t nl = rest.find('\n');
      const absl::string_view line = rest.substr(0, std::min(nl, max_line));
      split.push_back(line);
      need += line.size() + overhead;
      rest.remove_prefix(nl == absl::string_view::npos ? rest.size() : nl + 1);
    }
    if (lines > 0 && (bytes + need > max_bytes || lines + split.size() > max_lines)) break;
    bytes += need;
    lines += split.size();
    for (const absl::string_view line : split) out.emplace_back(line);
  }
  return n;
}

}  // namespace hotring::hotplug
