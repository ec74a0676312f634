#include "hotplug/modules/kmod_index_writer.h"

#include <array>
#include <list>
#include <utility>

namespace hotring::hotplug::modules {
namespace {

constexpr uint32_t kMagic = 0xB007F457;
constexpr uint32_t kVersion = 0x00020001;
constexpr uint32_t kFlagPrefix = 0x80000000;
constexpr uint32_t kFlagValues = 0x40000000;
constexpr uint32_t kFlagChildren = 0x20000000;

void AppendBe32(std::string* out, uint32_t v) {
  out->push_back(static_cast<char>(v >> 24));
  out->push_back(static_cast<char>(v >> 16));
  out->push_back(static_cast<char>(v >> 8));
  out->push_back(static_cast<char>(v));
}

bool IsSevenBit(absl::string_view s) {
  for (const char c : s) {
    if (c == '\0' || static_cast<unsigned char>(c) >= 128) return false;
  }
  return true;
}

}  // namespace

struct KmodIndexWriter::TrieNode {
  std::string prefix;
  std::list<std::pair<uint32_t, std::string>> values;  // by priority
  std::array<std::unique_ptr<TrieNode>, 128> children;

  void AddValue(absl::string_view value, uint32_t priority) {
    auto it = values.begin();
    while (it != values.end() && it->first < priority) ++it;
    values.emplace(it, priority, std::string(value));
  }

  // Children first (post-order, as depmod writes); returns this node's offset with flags.
  uint32_t Write(std::string* out) const {
    int first = -1;
    int last = -1;
    for (int c = 0; c < 128; ++c) {
      if (children[c] == nullptr) continue;
      if (first < 0) first = c;
      last = c;
    }
    std::string child_offsets;
    if (first >= 0) {
      for (int c = first; c <= last; ++c) {
        AppendBe32(&child_offsets, children[c] ? children[c]->Write(out) : 0);
      }
    }
    uint32_t offset = static_cast<uint32_t>(out->size());
    if (!prefix.empty()) {
      out->append(prefix);
      out->push_back('\0');
      offset |= kFlagPrefix;
    }
    if (first >= 0) {
      out->push_back(static_cast<char>(first));
      out->push_back(static_cast<char>(last));
      out->append(child_offsets);
      offset |= kFlagChildren;
    }
    if (!values.empty()) {
      AppendBe32(out, static_cast<uint32_t>(values.size()));
      for (const auto& [priority, value] : values) {
        AppendBe32(out, priority);
        out->append(value);
        out->push_back('\0');
      }
      offset |= kFlagValues;
    }
    return offset;
  }
};

KmodIndexWriter::KmodIndexWriter() : root_(std::make_unique<TrieNode>()) {}
KmodIndexWriter::~KmodIndexWriter() = default;

bool KmodIndexWriter::Insert(absl::string_view key, absl::string_view value, uint32_t priority) {
  if (!IsSevenBit(key) || !IsSevenBit(value)) return false;
  TrieNode* node = root_.get();
  size_t i = 0;
  for (;;) {
    // Split the node where its prefix stops agreeing with the key.
    size_t j = 0;
    while (j < node->prefix.size() && i + j < key.size() && node->prefix[j] == key[i + j]) ++j;
    if (j < node->prefix.size()) {
      auto tail = std::make_unique<TrieNode>();
      tail->prefix = node->prefix.substr(j + 1);
      tail->values = std::move(node->values);
      tail->children = std::move(node->children);
      const unsigned char split = static_cast<unsigned char>(node->prefix[j]);
      node->values.clear();
      node->children = {};
      node->prefix.resize(j);
      node->children[split] = std::move(tail);
    }
    i += j;
    if (i == key.size()) {
      node->AddValue(value, priority);
      return true;
    }
    const unsigned char ch = static_cast<unsigned char>(key[i]);
    if (node->children[ch] == nullptr) {
      auto leaf = std::make_unique<TrieNode>();
      leaf->prefix = std::string(key.substr(i + 1));
      leaf->AddValue(value, priority);
      node->children[ch] = std::move(leaf);
      return true;
    }
    node = node->children[ch].get();
    ++i;
  }
}

std::string KmodIndexWriter::Serialize() const {
  std::string out;
  AppendBe32(&out, kMagic);
  AppendBe32(&out, kVersion);
  AppendBe32(&out, 0);  // root offset, patched below
  const uint32_t root = root_->Write(&out);
  out[8] = static_cast<char>(root >> 24);
  out[9] = static_cast<char>(root >> 16);
  out[10] = static_cast<char>(root >> 8);
  out[11] = static_cast<char>(root);
  return out;
}

}  // namespace hotring::hotplug::modules
