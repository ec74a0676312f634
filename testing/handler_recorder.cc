#include "testing/handler_recorder.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "hotplug/wire.h"
#include "io/socket.h"
#include "testing/daemon_fixture.h"

namespace hotring::testing {
namespace {

std::string RecordHandlerSource() {
  if (const char* dir = std::getenv("TEST_SRCDIR")) {
    const std::string path = absl::StrCat(dir, "/hotring/testing/record_handler");
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "testing/record_handler";
}

}  // namespace

HandlerRecorder::HandlerRecorder() {
  dir_ = MakeTempDir("hotring_record").value_or("/tmp");
  handler_ = dir_ + "/handler";
  std::ifstream in(RecordHandlerSource(), std::ios::binary);
  std::ofstream out(handler_, std::ios::binary);
  out << in.rdbuf();
  out.close();
  ::chmod(handler_.c_str(), 0755);
}

std::vector<HandlerRun> HandlerRecorder::Runs() const {
  std::ifstream in(dir_ + "/record.log");
  std::vector<HandlerRun> runs;
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() < 9) continue;
    HandlerRun r;
    r.seqnum = f[0];
    r.devpath = f[1];
    r.action = f[2];
    r.subsystem = f[3];
    (void)absl::SimpleAtoi(f[4], &r.start);
    if (f[5] != "crash") (void)absl::SimpleAtoi(f[5], &r.end);
    r.fds = f[7];
    r.env_keys = f[8];
    runs.push_back(std::move(r));
  }
  return runs;
}

std::vector<HandlerRun> HandlerRecorder::RunsUnder(absl::string_view prefix) const {
  std::vector<HandlerRun> runs;
  for (HandlerRun& r : Runs()) {
    if (absl::StartsWith(r.devpath, prefix)) runs.push_back(std::move(r));
  }
  return runs;
}

ControlSender::ControlSender(const std::string& socket) {
  address_ = io::UnixAddress(socket).value_or(io::SocketAddress{});
  if (absl::StatusOr<UniqueFd> fd = io::UnixSocket(SOCK_DGRAM); fd.ok()) fd_ = std::move(*fd);
  // An address of only the family: the kernel picks a free abstract name.
  const sockaddr_un autobind = {.sun_family = AF_UNIX, .sun_path = {}};
  (void)::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&autobind), sizeof(sa_family_t));
}

bool ControlSender::SendRequest(const hotplug::ControlRequest& request) {
  return SendBytes(hotplug::EncodeWireMessage(hotplug::ControlRequestMessage(request)));
}

absl::StatusOr<hotplug::ControlReply> ControlSender::ReceiveReply(uint32_t cookie,
                                                                   absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string buffer(hotplug::kMaxWireBytes + 1, '\0');
  for (;;) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    pollfd readable{fd_.get(), POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(std::max<int64_t>(0, left_ms)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return ErrnoStatus("poll");
    if (ready == 0) return absl::DeadlineExceededError("no reply from the daemon");
    const ssize_t n = ::recv(fd_.get(), buffer.data(), buffer.size(), 0);
    if (n < 0) return ErrnoStatus("recv");
    absl::StatusOr<hotplug::WireMessage> message =
        hotplug::ParseWireMessage(absl::string_view(buffer.data(), static_cast<size_t>(n)));
    if (!message.ok() || message->cookie != cookie) continue;
    return hotplug::ControlReplyFromMessage(*std::move(message));
  }
}

bool ControlSender::SendBytes(absl::string_view bytes) {
  return ::sendto(fd_.get(), bytes.data(), bytes.size(), 0, address_.get(), address_.length) ==
         static_cast<ssize_t>(bytes.size());
}

bool ControlSender::SendEvent(const hotplug::EnvVars& env) {
  absl::StatusOr<hotplug::Event> event = hotplug::EventFromFields(env);
  if (!event.ok()) return false;
  return SendBytes(hotplug::EncodeWireMessage(hotplug::EventMessage(*event, 1, false)));
}

hotplug::EnvVars TestEvent(uint64_t seqnum, const std::string& devpath, hotplug::EnvVars extra) {
  hotplug::EnvVars env = {{"ACTION", "add"},
                          {"DEVPATH", devpath},
                          {"SUBSYSTEM", "test"},
                          {"SEQNUM", absl::StrCat(seqnum)}};
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace hotring::testing
