// clone_gate_exec SOCKET PROGRAM [ARG...]: runs PROGRAM under a seccomp filter that hands every
// clone, clone3, fork and vfork of PROGRAM and its descendants to a supervisor (a
// testing::CloneGate listening on the unix stream socket SOCKET (@NAME: abstract)), which lets each call proceed
// or makes it fail. Connects, installs the filter, passes the filter's listener descriptor over
// the socket, closes both and execs PROGRAM, with every other descriptor left as it was.
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace {

#if defined(__x86_64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_AARCH64;
#elif defined(__arm__)
constexpr unsigned kAuditArch = AUDIT_ARCH_ARM;
#else
#error "clone_gate_exec: unknown architecture"
#endif

int Fail(const char* what) {
  std::fprintf(stderr, "clone_gate_exec: %s: %s\n", what, std::strerror(errno));
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: clone_gate_exec SOCKET PROGRAM [ARG...]\n");
    return 2;
  }
  const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return Fail("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // SOCKET is "@NAME" (abstract) or a path.
  const size_t n = std::strlen(argv[1]);
  if (n >= sizeof(addr.sun_path)) return Fail("socket name too long");
  std::memcpy(addr.sun_path, argv[1], n);
  if (argv[1][0] == '@') addr.sun_path[0] = '\0';
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
  if (::connect(sock, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    return Fail("connect");
  }
  // A syscall of another architecture (x32, compat) is let through: the gate is for ours.
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
#ifdef __NR_fork
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fork, 4, 0),
#else
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 4, 0),
#endif
#ifdef __NR_vfork
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_vfork, 3, 0),
#else
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 3, 0),
#endif
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Fail("prctl(PR_SET_NO_NEW_PRIVS)");
  const long listener = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                  SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  if (listener < 0) return Fail("seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)");
  char control[CMSG_SPACE(sizeof(int))] = {};
  char byte = 'g';
  iovec iov{&byte, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  const int fd = static_cast<int>(listener);
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  if (::sendmsg(sock, &msg, 0) != 1) return Fail("sendmsg");
  ::close(fd);
  ::close(sock);
  ::execv(argv[2], argv + 2);
  return Fail("execv");
}
