// Reader of kmod's binary index format (modules.alias.bin, modules.dep.bin, modules.symbols.bin,
// modules.builtin.bin, modules.builtin.alias.bin): a path-compressed trie whose keys map to
// prioritised string values. The file is mapped once; lookups decode nodes in place and never
// allocate per node. Every offset and string is bounds-checked, so a corrupt file yields no
// match, never a read outside the mapping.
#ifndef HOTRING_HOTPLUG_MODULES_KMOD_INDEX_H_
#define HOTRING_HOTPLUG_MODULES_KMOD_INDEX_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {

// One value found by a wildcard search, pointing into the index image.
struct IndexValue {
  uint32_t priority = 0;
  absl::string_view value;
};

// Owns one index image (a read-only mapping of a .bin file, or bytes built in memory).
class KmodIndex {
 public:
  KmodIndex(KmodIndex&&) noexcept;
  KmodIndex& operator=(KmodIndex&&) noexcept;
  ~KmodIndex();

  // Maps `path`. NotFound when it does not exist; InvalidArgument when it is not a regular
  // file, is empty or shorter than the header, has a bad magic or version, or has lost its root
  // node (a truncated file: depmod writes the root last).
  [[nodiscard]] static absl::StatusOr<KmodIndex> Open(const std::string& path);
  // An index over bytes in kmod's format (built by KmodIndexWriter).
  [[nodiscard]] static absl::StatusOr<KmodIndex> FromBytes(std::string bytes);

  // Exact lookup: the first stored value of `key`, as kmod's index_search.
  [[nodiscard]] std::optional<absl::string_view> Find(absl::string_view key) const;

  // Keys are glob patterns (fnmatch, no flags): every value of every key matching `key`,
  // ordered as kmod orders them (priority ascending; equal priorities in reverse discovery
  // order). Appends to `out`. Returns how many values the walk passed to fnmatch (for benches).
  size_t SearchWild(absl::string_view key, std::vector<IndexValue>* out) const;

  // kmod_dump_index (the end of `modprobe -c`): one "PREFIXKEY VALUE" line per stored value,
  // a node's values before its children, children in byte order. Appends to `out`.
  void Dump(absl::string_view prefix, std::string* out) const;

  [[nodiscard]] size_t size() const { return size_; }

 private:
  KmodIndex() = default;
  [[nodiscard]] absl::Status CheckHeader();

  // Either a mapping (munmap'd on destruction) or owned bytes.
  const char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::unique_ptr<std::string> bytes_;
  uint32_t root_ = 0;
};

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_KMOD_INDEX_H_
