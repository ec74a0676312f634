// IdleMemory: what a long-lived process gives back to the kernel when it has nothing to do: the
// free memory inside its heap (malloc_trim) and the page-table entries of its own program text.
#ifndef HOTRING_CORE_IDLE_MEMORY_H_
#define HOTRING_CORE_IDLE_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace hotring {

// One mapped address range [start, end).
struct AddressRange {
  uintptr_t start = 0;
  uintptr_t end = 0;
  bool operator==(const AddressRange& other) const = default;
};

// Gives back the storage of an empty container that a burst grew (erasing never shrinks a
// hash table, clear() never shrinks a vector): true when it was empty; a non-empty one is
// left alone.
template <typename Container>
bool ReleaseIfEmpty(Container& container) {
  if (!container.empty()) return false;
  Container().swap(container);
  return true;
}

// The executable, private, read-only mappings (`r-xp`) of the file with this device
// (major:minor) and inode in a /proc/PID/maps text. Pure: the text and the identity are given.
[[nodiscard]] std::vector<AddressRange> ExecutableMappingsOf(absl::string_view maps,
                                                             unsigned major, unsigned minor,
                                                             uint64_t inode);

// Owns the list of the program's text mappings, found once at creation.
//
// Why the text: the static binary is 3.8 MB and the kernel maps file pages 64 KiB at a time
// around each fault (fault-around), so start-up alone left 3 MB of it mapped: most of an idle
// daemon's resident set, for code that an idle daemon never runs (flag parsing, start-up,
// the code of a burst long past). MADV_DONTNEED on a private, never-written file mapping only
// drops our page-table entries: the pages stay in the page cache (on an initramfs they are in
// memory anyway), and whatever runs next faults its pages back in (minor faults, a few dozen
// for one event). Only `r-xp` mappings are touched: a writable or RELRO mapping may hold
// pages we changed, which DONTNEED would throw away.
class IdleMemory {
 public:
  // Reads /proc/self/maps; finds nothing (and Release only trims the heap) if it cannot.
  static IdleMemory ForThisProgram();

  // Gives back free heap memory and the program text's mappings. Returns the text bytes
  // whose mappings were dropped (resident or not).
  size_t Release() const;
  // The two halves of Release: free heap memory (malloc_trim), and the text's mappings
  // (the bytes dropped; 0 when madvise refused every range).
  void TrimHeap() const;
  size_t ReleaseText() const;

  [[nodiscard]] const std::vector<AddressRange>& text() const { return text_; }

 private:
  explicit IdleMemory(std::vector<AddressRange> text) : text_(std::move(text)) {}
  std::vector<AddressRange> text_;
};

}  // namespace hotring

#endif  // HOTRING_CORE_IDLE_MEMORY_H_
