// Writer of kmod's binary index format. Tests build fake module trees with it, and the module
// index builds an in-memory image from a text file (modules.alias, modules.dep, ...) when its
// .bin is missing, so that one reader serves both.
#ifndef HOTRING_HOTPLUG_MODULES_KMOD_INDEX_WRITER_H_
#define HOTRING_HOTPLUG_MODULES_KMOD_INDEX_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {

// Owns an in-memory trie of (key, value, priority) entries, as depmod builds it.
class KmodIndexWriter {
 public:
  KmodIndexWriter();
  ~KmodIndexWriter();
  KmodIndexWriter(const KmodIndexWriter&) = delete;
  KmodIndexWriter& operator=(const KmodIndexWriter&) = delete;

  // Adds a value to `key`; values of one key are kept by priority, a new value going before
  // the ones of equal priority (depmod's order). Keys and values are 7-bit ASCII without NUL;
  // returns false (and adds nothing) otherwise.
  bool Insert(absl::string_view key, absl::string_view value, uint32_t priority);

  // The index image: magic, version, root offset, nodes written children first.
  [[nodiscard]] std::string Serialize() const;

  struct TrieNode;

 private:
  std::unique_ptr<TrieNode> root_;
};

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_KMOD_INDEX_WRITER_H_
