// Compile-time checks that the structures hotring exchanges with the kernel have the kernel's
// layout on the architecture being built. hotring defines none of these itself; it takes them
// from the C library's and liburing's headers. A cross build against a mismatched header set
// (or a 32-bit build without -D_TIME_BITS=64 -D_FILE_OFFSET_BITS=64) fails here instead of
// corrupting I/O at run time.
#include <linux/netlink.h>
#include <liburing.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

namespace hotring::io {
namespace {

// io_uring's rings (include/uapi/linux/io_uring.h). user_data is 64 bits on every
// architecture; the reactor stores a slot index and a generation in it, never a pointer.
static_assert(sizeof(io_uring_sqe) == 64);
static_assert(offsetof(io_uring_sqe, user_data) == 32);
static_assert(sizeof(io_uring_sqe{}.user_data) == sizeof(uint64_t));
static_assert(sizeof(io_uring_cqe) == 16);  // the reactor does not set IORING_SETUP_CQE32
static_assert(offsetof(io_uring_cqe, user_data) == 0);
static_assert(offsetof(io_uring_cqe, res) == 8);
static_assert(offsetof(io_uring_cqe, flags) == 12);
// Provided-buffer ring entries and the header a multishot recvmsg writes into each buffer.
static_assert(sizeof(io_uring_buf) == 16);
static_assert(sizeof(io_uring_recvmsg_out) == 16);
// IORING_OP_TIMEOUT reads a __kernel_timespec: 64-bit seconds even on 32-bit ARM.
static_assert(sizeof(__kernel_timespec) == 16);
static_assert(sizeof(__kernel_timespec{}.tv_sec) == 8);

// SCM_CREDENTIALS on the netlink and control sockets; the uevent socket's address.
static_assert(sizeof(ucred) == 12);
static_assert(sizeof(sockaddr_nl) == 12);
static_assert(offsetof(sockaddr_nl, nl_groups) == 8);
// signalfd reads are exactly one of these.
static_assert(sizeof(signalfd_siginfo) == 128);

// Deadlines, file offsets and sizes are 64-bit everywhere; on 32-bit ARM only with the
// toolchain's -D_TIME_BITS=64 -D_FILE_OFFSET_BITS=64 (third_party/toolchains/BUILD).
static_assert(sizeof(time_t) == 8, "build with -D_TIME_BITS=64 -D_FILE_OFFSET_BITS=64");
static_assert(sizeof(timespec) == 16);
static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64");

}  // namespace
}  // namespace hotring::io
