#include "io/socket.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace hotring::io {

absl::StatusOr<SocketAddress> UnixAddress(absl::string_view name) {
  SocketAddress address;
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  const bool abstract = !name.empty() && name[0] == '@';
  if (name.empty() || name.size() >= sizeof(un.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket name must be 1..", sizeof(un.sun_path) - 1, " bytes: '", name, "'"));
  }
  std::memcpy(un.sun_path, name.data(), name.size());
  if (abstract) un.sun_path[0] = '\0';
  std::memcpy(&address.storage, &un, sizeof(un));
  address.length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (abstract ? 0 : 1));
  return address;
}

absl::StatusOr<UniqueFd> UnixSocket(int type) {
  const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket(AF_UNIX)");
  return UniqueFd(fd);
}

absl::StatusOr<UniqueFd> BindUnix(int type, absl::string_view name) {
  HOTRING_ASSIGN_OR_RETURN(const SocketAddress address, UnixAddress(name));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd fd, UnixSocket(type));
  if (::bind(fd.get(), address.get(), address.length) == 0) return fd;
  if (errno != EADDRINUSE || name[0] == '@') {
    if (errno == EADDRINUSE) {
      return absl::AlreadyExistsError(absl::StrCat("socket ", name, " is already in use"));
    }
    return ErrnoStatus(absl::StrCat("bind(", name, ")"));
  }
  // A path that exists: live if something answers a connect, else a leftover from a crash. The
  // probe does not block: a listener whose backlog is full (EAGAIN) is live too.
  HOTRING_ASSIGN_OR_RETURN(UniqueFd probe, UnixSocket(type | SOCK_NONBLOCK));
  if (::connect(probe.get(), address.get(), address.length) == 0 || errno == EAGAIN) {
    return absl::AlreadyExistsError(
        absl::StrCat("socket ", name, " is already in use (another daemon is running)"));
  }
  if (errno != ECONNREFUSED) return ErrnoStatus(absl::StrCat("connect(", name, ")"));
  struct stat st;
  if (::lstat(std::string(name).c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    return absl::AlreadyExistsError(absl::StrCat(name, " exists and is not a socket"));
  }
  ::unlink(std::string(name).c_str());
  if (::bind(fd.get(), address.get(), address.length) != 0) {
    return ErrnoStatus(absl::StrCat("bind(", name, ")"));
  }
  return fd;
}

absl::StatusOr<UniqueFd> ConnectUnix(int type, absl::string_view name) {
  HOTRING_ASSIGN_OR_RETURN(const SocketAddress address, UnixAddress(name));
  HOTRING_ASSIGN_OR_RETURN(UniqueFd fd, UnixSocket(type));
  if (::connect(fd.get(), address.get(), address.length) != 0) {
    return ErrnoStatus(absl::StrCat("connect(", name, ")"));
  }
  return fd;
}

absl::Status EnablePassCred(int fd) {
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) {
    return ErrnoStatus("setsockopt(SO_PASSCRED)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<UniqueFd, UniqueFd>> UnixSocketPair(int type) {
  int fds[2];
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0) return ErrnoStatus("socketpair");
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

}  // namespace hotring::io
