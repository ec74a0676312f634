#include "core/idle_memory.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/log.h"
#include "core/unique_fd.h"

namespace hotring {

std::vector<AddressRange> ExecutableMappingsOf(absl::string_view maps, unsigned major,
                                               unsigned minor, uint64_t inode) {
  std::vector<AddressRange> out;
  for (absl::string_view line : absl::StrSplit(maps, '\n')) {
    // start-end perms offset major:minor inode [path]
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 5 || f[1] != "r-xp") continue;
    const std::vector<absl::string_view> range = absl::StrSplit(f[0], '-');
    const std::vector<absl::string_view> device = absl::StrSplit(f[3], ':');
    uint64_t start, end, file_inode;
    unsigned file_major, file_minor;
    if (range.size() != 2 || device.size() != 2 ||
        !absl::SimpleHexAtoi(range[0], &start) || !absl::SimpleHexAtoi(range[1], &end) ||
        !absl::SimpleHexAtoi(device[0], &file_major) ||
        !absl::SimpleHexAtoi(device[1], &file_minor) || !absl::SimpleAtoi(f[4], &file_inode)) {
      continue;
    }
    if (file_major != major || file_minor != minor || file_inode != inode || end <= start) {
      continue;
    }
    out.push_back(AddressRange{static_cast<uintptr_t>(start), static_cast<uintptr_t>(end)});
  }
  return out;
}

IdleMemory IdleMemory::ForThisProgram() {
  struct stat exe;
  if (::stat("/proc/self/exe", &exe) != 0) return IdleMemory({});
  UniqueFd fd(::open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return IdleMemory({});
  std::string maps;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    maps.append(buffer, static_cast<size_t>(n));
  }
  return IdleMemory(ExecutableMappingsOf(maps, major(exe.st_dev), minor(exe.st_dev),
                                         static_cast<uint64_t>(exe.st_ino)));
}

size_t IdleMemory::Release() const {
  TrimHeap();
  return ReleaseText();
}

void IdleMemory::TrimHeap() const { (void)::malloc_trim(0); }

size_t IdleMemory::ReleaseText() const {
  size_t released = 0;
  for (const AddressRange& r : text_) {
    if (::madvise(reinterpret_cast<void*>(r.start), r.end - r.start, MADV_DONTNEED) != 0) {
      LogDebug("madvise(program text, MADV_DONTNEED): %s", strerror(errno));
      continue;
    }
    released += r.end - r.start;
  }
  return released;
}

}  // namespace hotring
