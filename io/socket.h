// Socket helpers: Unix datagram/seqpacket sockets by path or abstract name ("@name"), and
// credential passing. Every socket is created close-on-exec.
#ifndef HOTRING_IO_SOCKET_H_
#define HOTRING_IO_SOCKET_H_

#include <sys/socket.h>

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/unique_fd.h"
#include "io/ops.h"

namespace hotring::io {

// A sockaddr_un for `name`: a filesystem path, or an abstract name when it starts with '@'.
absl::StatusOr<SocketAddress> UnixAddress(absl::string_view name);

// A new unbound AF_UNIX socket of `type` (SOCK_DGRAM, SOCK_SEQPACKET, ...), close-on-exec.
absl::StatusOr<UniqueFd> UnixSocket(int type);

// Binds a new socket of `type` to `name`. For a path, a stale socket file that nobody listens
// on is replaced; a live one is AlreadyExists (the bind is the lock against a second daemon).
absl::StatusOr<UniqueFd> BindUnix(int type, absl::string_view name);

// Connects a new socket of `type` to `name`.
absl::StatusOr<UniqueFd> ConnectUnix(int type, absl::string_view name);

// SO_PASSCRED: receive SCM_CREDENTIALS with each message.
absl::Status EnablePassCred(int fd);

// socketpair(AF_UNIX, type).
absl::StatusOr<std::pair<UniqueFd, UniqueFd>> UnixSocketPair(int type);

}  // namespace hotring::io

#endif  // HOTRING_IO_SOCKET_H_
