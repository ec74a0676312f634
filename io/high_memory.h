// Whether io_uring may pin a user page the kernel cannot address directly (32-bit high
// memory), which decides how provided buffers reach the kernel (see BufferRing).
#ifndef HOTRING_IO_HIGH_MEMORY_H_
#define HOTRING_IO_HIGH_MEMORY_H_

#include <cstddef>
#include <optional>

#include "absl/strings/string_view.h"

namespace hotring::io {

// A registered provided-buffer ring (IORING_REGISTER_PBUF_RING with memory from user space)
// is pinned and then read by the kernel through page_address(), which is NULL for a high-memory
// page of a 32-bit kernel: Debian's 6.1 armmp-lpae kernel oopses in io_buffer_select, and
// kernels with upstream commit f8024f1f36a3 (6.6, and 6.5 stable) refuse the registration with EINVAL
// instead. High memory exists only on a 32-bit kernel with CONFIG_HIGHMEM and more RAM than its
// direct map (about 760 MiB on ARM's 3G/1G split); /proc/meminfo then has a non-zero HighTotal.
//
// `meminfo` is /proc/meminfo's text, or nullopt when it could not be read; `pointer_bytes` is
// the process's pointer size. A 64-bit process runs on a 64-bit kernel, which has no high
// memory. A 32-bit process may run on either; without a readable meminfo, or with a HighTotal
// line it cannot parse, the answer is yes (a fallback costs a little speed; an oops costs the
// board).
[[nodiscard]] bool PinnedPagesMayBeHighMemory(std::optional<absl::string_view> meminfo,
                                              size_t pointer_bytes);

}  // namespace hotring::io

#endif  // HOTRING_IO_HIGH_MEMORY_H_
