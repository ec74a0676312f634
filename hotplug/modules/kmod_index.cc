#include "hotplug/modules/kmod_index.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::modules {
namespace {

constexpr uint32_t kMagic = 0xB007F457;
constexpr uint32_t kVersionMajor = 2;
constexpr uint32_t kFlagPrefix = 0x80000000;
constexpr uint32_t kFlagValues = 0x40000000;
constexpr uint32_t kFlagChildren = 0x20000000;
constexpr uint32_t kOffsetMask = 0x0FFFFFFF;
// The deepest a walk recurses into the trie, in nodes: each level is a branch of depmod's tree
// (single-child chains are one node's prefix), so a good index stays far below it whatever its
// keys' lengths; deeper can only be a corrupt (cyclic) index, and this bounds the stack.
constexpr size_t kMaxDepth = 1024;

uint32_t ReadBe32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

// One decoded node; views into the image.
struct Node {
  absl::string_view prefix;
  unsigned first = 1;  // first > last: no children
  unsigned last = 0;
  const char* children = nullptr;
  uint32_t value_count = 0;
  const char* values = nullptr;  // first value record
};

// Decodes and bounds-checks nodes of one image, reading at most `budget` bytes of it in all:
// a walk over depmod's tree reads each node a known number of times, so its owner sets the
// budget from the image's size, and a corrupt image (child tables shared or cyclic, a node of
// many values reached by many paths, long prefixes decoded again and again) costs time linear
// in its size instead of quadratic or exponential. Once the budget is spent, nothing decodes.
class Walker {
 public:
  Walker(const char* data, size_t size, size_t budget)
      : data_(data), size_(size), left_(budget) {}

  [[nodiscard]] bool Decode(uint32_t offset, Node* node) const {
    size_t pos = offset & kOffsetMask;
    // A node without prefix, children or values takes no bytes: depmod's empty index is its
    // header and a root offset equal to the file's size.
    if (pos == 0 || pos > size_) return false;
    *node = Node{};
    if (offset & kFlagPrefix) {
      const size_t limit = std::min(size_ - pos, left_);
      const void* nul = std::memchr(data_ + pos, '\0', limit);
      if (nul == nullptr) {
        left_ -= limit;
        return false;
      }
      const size_t len = static_cast<const char*>(nul) - (data_ + pos);
      left_ -= len + 1;
      node->prefix = absl::string_view(data_ + pos, len);
      pos += len + 1;
    }
    if (offset & kFlagChildren) {
      if (pos + 2 > size_ || !Spend(2)) return false;
      node->first = static_cast<unsigned char>(data_[pos]);
      node->last = static_cast<unsigned char>(data_[pos + 1]);
      pos += 2;
      if (node->last < node->first) return false;
      const size_t count = node->last - node->first + 1;
      if (pos + 4 * count > size_) return false;
      node->children = data_ + pos;
      pos += 4 * count;
    }
    if (offset & kFlagValues) {
      if (pos + 4 > size_ || !Spend(4)) return false;
      node->value_count = ReadBe32(data_ + pos);
      node->values = data_ + pos + 4;
    }
    return true;
  }

  [[nodiscard]] bool Child(const Node& node, unsigned char ch, Node* child) const {
    if (node.children == nullptr || ch < node.first || ch > node.last || !Spend(4)) return false;
    return Decode(ReadBe32(node.children + 4 * (ch - node.first)), child);
  }

  // Calls f(priority, value) for each stored value, in stored order; stops at a bad record or
  // when the budget is spent.
  template <typename F>
  void ForEachValue(const Node& node, F&& f) const {
    const char* p = node.values;
    for (uint32_t i = 0; i < node.value_count; ++i) {
      if (p + 4 > data_ + size_ || !Spend(4)) return;
      const uint32_t priority = ReadBe32(p);
      p += 4;
      const size_t limit = std::min(static_cast<size_t>(data_ + size_ - p), left_);
      const void* nul = std::memchr(p, '\0', limit);
      if (nul == nullptr) {
        left_ -= limit;
        return;
      }
      const size_t len = static_cast<const char*>(nul) - p;
      left_ -= len + 1;
      f(priority, absl::string_view(p, len));
      p += len + 1;
    }
  }

 private:
  [[nodiscard]] bool Spend(size_t n) const {
    if (n > left_) {
      left_ = 0;
      return false;
    }
    left_ -= n;
    return true;
  }

 private:
  const char* data_;
  size_t size_;
  mutable size_t left_;
};

absl::Status CheckSize(size_t size) {
  if (size == 0) return absl::InvalidArgumentError("empty file");
  if (size < 12) {
    return absl::InvalidArgumentError(absl::StrCat("shorter than its header (", size, " bytes)"));
  }
  return absl::OkStatus();
}

// The bytes a walk may read: `passes` times the image (and a little for a tiny one). A walk
// over depmod's tree reads each node once (a dump, a lookup), or once more for each wildcard
// character of a query, whose literal descent also enters the wildcard subtrees.
size_t WalkBudget(size_t image_size, size_t passes) { return (image_size + 64) * passes; }

struct Found {
  uint32_t priority;
  size_t seq;
  absl::string_view value;
};

// Positions of the query that a pattern prefix can have consumed up to (bit j: the prefix
// matches query[start, j)). Lets the wildcard walk drop a subtree as soon as no key below it
// can match, instead of fnmatch'ing every key of it; fnmatch still decides every match.
constexpr size_t kMaxTracked = 255;
using Positions = std::bitset<kMaxTracked + 1>;

struct GlobState {
  enum class Mode : uint8_t { kTrack, kBracket, kUnknown };
  Positions positions;
  Mode mode = Mode::kTrack;
  uint32_t bracket_start = 0;  // index in the pattern of the first character after '['
};

// kmod's wildcard search: descend literally until a wildcard, then enumerate the wildcard
// subtree and fnmatch each complete key (from the wildcard on) against the rest of the query.
// In depmod's tree the literal path and the wildcard subtrees are disjoint, so a search visits
// each node once at most and collects each value record once at most (once more for each
// wildcard of the query itself, whose literal descent enters the wildcard subtrees too); the
// budgets of nodes (about one per byte of the image) and of values (one per five bytes) hold a
// corrupt image whose child tables are shared or cyclic to the same bounds, where its paths
// could be exponential, and the walker's budget of bytes bounds the work of each visit.
class WildSearch {
 public:
  // `wildcards`: the query's own '*', '?' and '[': each lets a node be reached once more.
  WildSearch(const Walker& walker, size_t image_size, size_t wildcards, const std::string& key)
      : walker_(walker),
        key_(key),
        // + 1: Run hands its node to All when the prefix has a wildcard
        nodes_left_((image_size + 2) * (1 + wildcards)),
        values_left_((image_size / 5 + 1) * (1 + wildcards)) {
    tracked_ = key_.size() <= kMaxTracked;
    mask_of_.fill(0);  // slot 0: the empty mask of characters not in the key
    masks_.emplace_back();
    if (tracked_) {
      for (size_t j = 0; j < key_.size(); ++j) {
        uint8_t& slot = mask_of_[static_cast<unsigned char>(key_[j]) & 127];
        if (slot == 0) {
          slot = static_cast<uint8_t>(masks_.size());
          masks_.emplace_back();
        }
        masks_[slot].set(j);
        any_.set(j);
      }
      for (size_t j = 0; j <= key_.size(); ++j) upto_end_.set(j);
    }
  }

  const Positions& Mask(unsigned char c) const { return masks_[mask_of_[c & 127]]; }

  void Run(const Node& root) {
    Node node = root;
    size_t i = 0;
    for (;;) {
      if (!Visit()) return;
      for (size_t j = 0; j < node.prefix.size(); ++j) {
        const char ch = node.prefix[j];
        if (ch == '*' || ch == '?' || ch == '[') {
          pattern_.clear();
          All(node, j, i + j, Start(i + j));
          return;
        }
        if (ch != KeyAt(i + j)) return;
      }
      i += node.prefix.size();
      for (const char wildcard : {'*', '?', '['}) {
        Node child;
        if (walker_.Child(node, wildcard, &child)) {
          pattern_.assign(1, wildcard);
          GlobState state = Start(i);
          if (Step(&state, wildcard)) All(child, 0, i, state);
        }
      }
      if (KeyAt(i) == '\0') {
        AddValues(node);
        return;
      }
      Node child;
      if (!walker_.Child(node, static_cast<unsigned char>(key_[i]), &child)) return;
      node = child;
      ++i;
    }
  }

  std::vector<Found>& found() { return found_; }
  size_t fnmatch_calls() const { return fnmatch_calls_; }

 private:
  char KeyAt(size_t i) const { return i < key_.size() ? key_[i] : '\0'; }

  // Spends one node of the budget; false when none is left.
  [[nodiscard]] bool Visit() {
    if (nodes_left_ == 0) return false;
    --nodes_left_;
    return true;
  }

  GlobState Start(size_t position) const {
    GlobState state;
    if (!tracked_) {
      state.mode = GlobState::Mode::kUnknown;
    } else {
      state.positions.set(position);
    }
    return state;
  }

  // Applies pattern_.back() (just appended) to `state`; false when no key below can match.
  bool Step(GlobState* state, char c) const {
    switch (state->mode) {
      case GlobState::Mode::kUnknown:
        return true;
      case GlobState::Mode::kBracket: {
        if (c == '[' || c == '\\') {
          state->mode = GlobState::Mode::kUnknown;
          return true;
        }
        absl::string_view body(pattern_.data() + state->bracket_start,
                               pattern_.size() - 1 - state->bracket_start);
        const bool negated = !body.empty() && (body[0] == '!' || body[0] == '^');
        if (negated) body.remove_prefix(1);
        if (c != ']' || body.empty()) return true;  // ']' first is a member
        Positions members;
        for (size_t k = 0; k < body.size(); ++k) {
          unsigned lo = static_cast<unsigned char>(body[k]);
          unsigned hi = lo;
          if (k + 2 < body.size() && body[k + 1] == '-') {
            hi = static_cast<unsigned char>(body[k + 2]);
            k += 2;
          }
          if (hi < lo || hi >= 128) {
            state->mode = GlobState::Mode::kUnknown;
            return true;
          }
          for (unsigned ch = lo; ch <= hi; ++ch) members |= Mask(static_cast<unsigned char>(ch));
        }
        if (negated) members = any_ & ~members;
        state->positions = (state->positions & members) << 1;
        state->mode = GlobState::Mode::kTrack;
        return state->positions.any();
      }
      case GlobState::Mode::kTrack:
        break;
    }
    switch (c) {
      case '*': {
        size_t lowest = 0;
        while (lowest <= kMaxTracked && !state->positions.test(lowest)) ++lowest;
        if (lowest > kMaxTracked) return false;
        state->positions = (upto_end_ >> lowest) << lowest;
        return true;
      }
      case '?':
        state->positions = (state->positions & any_) << 1;
        return state->positions.any();
      case '[':
        state->mode = GlobState::Mode::kBracket;
        state->bracket_start = static_cast<uint32_t>(pattern_.size());
        return true;
      case '\\':
        state->mode = GlobState::Mode::kUnknown;
        return true;
      default:
        state->positions = (state->positions & Mask(static_cast<unsigned char>(c))) << 1;
        return state->positions.any();
    }
  }

  void AddValues(const Node& node) {
    walker_.ForEachValue(node, [&](uint32_t priority, absl::string_view value) {
      if (values_left_ == 0) return;
      --values_left_;
      found_.push_back({priority, found_.size(), value});
    });
  }

  // `subkey` indexes key_; pattern_ holds the key text from the first wildcard on; `state`
  // has consumed pattern_ so far.
  void All(const Node& node, size_t j, size_t subkey, GlobState state, size_t depth = 0) {
    const size_t base = pattern_.size();
    if (depth > kMaxDepth || !Visit()) return;
    for (size_t k = j; k < node.prefix.size(); ++k) {
      pattern_.push_back(node.prefix[k]);
      if (!Step(&state, node.prefix[k])) {
        pattern_.resize(base);
        return;
      }
    }
    if (node.children != nullptr) {
      for (unsigned ch = node.first; ch <= node.last; ++ch) {
        Node child;
        if (!walker_.Child(node, static_cast<unsigned char>(ch), &child)) continue;
        pattern_.push_back(static_cast<char>(ch));
        GlobState child_state = state;
        if (Step(&child_state, static_cast<char>(ch))) {
          All(child, 0, subkey, child_state, depth + 1);
        }
        pattern_.pop_back();
      }
    }
    if (node.value_count > 0 &&
        (state.mode != GlobState::Mode::kTrack || state.positions.test(key_.size()))) {
      ++fnmatch_calls_;
      if (::fnmatch(pattern_.c_str(), key_.c_str() + std::min(subkey, key_.size()), 0) == 0) {
        AddValues(node);
      }
    }
    pattern_.resize(base);
  }

  const Walker& walker_;
  const std::string& key_;
  bool tracked_ = false;
  // Masks of the key's distinct characters (at most 128 + the empty one).
  std::array<uint8_t, 128> mask_of_;
  std::vector<Positions> masks_;
  Positions any_;
  Positions upto_end_;
  std::string pattern_;
  std::vector<Found> found_;
  size_t fnmatch_calls_ = 0;
  size_t nodes_left_;
  size_t values_left_;
};

}  // namespace

KmodIndex::KmodIndex(KmodIndex&& other) noexcept { *this = std::move(other); }

KmodIndex& KmodIndex::operator=(KmodIndex&& other) noexcept {
  if (this != &other) {
    if (mapped_) ::munmap(const_cast<char*>(data_), size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    bytes_ = std::move(other.bytes_);
    root_ = other.root_;
  }
  return *this;
}

KmodIndex::~KmodIndex() {
  if (mapped_) ::munmap(const_cast<char*>(data_), size_);
}

absl::Status KmodIndex::CheckHeader() {
  HOTRING_RETURN_IF_ERROR(CheckSize(size_));
  if (const uint32_t magic = ReadBe32(data_); magic != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a kmod index (magic ", absl::Hex(magic, absl::kZeroPad8), ")"));
  }
  if (const uint32_t version = ReadBe32(data_ + 4); version >> 16 != kVersionMajor) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported kmod index version ", version >> 16));
  }
  root_ = ReadBe32(data_ + 8);
  // depmod writes the root last, so a file cut short loses its root (or the root's child
  // table): one decode at open tells a truncated file from a good one. Damage deeper inside
  // only costs the keys below it (every read is bounds-checked).
  const Walker walker(data_, size_, WalkBudget(size_, 2));
  Node root;
  if (!walker.Decode(root_, &root)) {
    return absl::InvalidArgumentError(absl::StrCat("truncated or corrupt (root node at offset ",
                                                   root_ & kOffsetMask, " of ", size_,
                                                   " bytes)"));
  }
  if (root.children != nullptr) {
    for (unsigned i = 0; i <= root.last - root.first; ++i) {
      const uint32_t child = ReadBe32(root.children + 4 * i);
      if ((child & kOffsetMask) > size_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "truncated or corrupt (child offset ", child & kOffsetMask, " of ", size_, " bytes)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<KmodIndex> KmodIndex::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open ", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat ", path));
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(path + ": not a regular file");
  // Checked before mmap, which refuses a length of 0.
  if (absl::Status size = CheckSize(static_cast<size_t>(st.st_size)); !size.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", size.message()));
  }
  KmodIndex index;
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) return ErrnoStatus(absl::StrCat("mmap ", path));
  index.data_ = static_cast<const char*>(map);
  index.size_ = static_cast<size_t>(st.st_size);
  index.mapped_ = true;
  if (absl::Status header = index.CheckHeader(); !header.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", header.message()));
  }
  return index;
}

absl::StatusOr<KmodIndex> KmodIndex::FromBytes(std::string bytes) {
  KmodIndex index;
  index.bytes_ = std::make_unique<std::string>(std::move(bytes));
  index.data_ = index.bytes_->data();
  index.size_ = index.bytes_->size();
  HOTRING_RETURN_IF_ERROR(index.CheckHeader());
  return index;
}

std::optional<absl::string_view> KmodIndex::Find(absl::string_view key) const {
  if (const size_t nul = key.find('\0'); nul != key.npos) key = key.substr(0, nul);
  const Walker walker(data_, size_, WalkBudget(size_, 2));
  Node node;
  if (!walker.Decode(root_, &node)) return std::nullopt;
  size_t i = 0;
  for (;;) {
    if (key.size() - i < node.prefix.size() ||
        key.substr(i, node.prefix.size()) != node.prefix) {
      return std::nullopt;
    }
    i += node.prefix.size();
    if (i == key.size()) {
      std::optional<absl::string_view> first;
      if (node.value_count > 0) {
        walker.ForEachValue(node, [&](uint32_t, absl::string_view value) {
          if (!first) first = value;
        });
      }
      return first;
    }
    Node child;
    if (!walker.Child(node, static_cast<unsigned char>(key[i]), &child)) return std::nullopt;
    node = child;
    ++i;
  }
}

size_t KmodIndex::SearchWild(absl::string_view key, std::vector<IndexValue>* out) const {
  std::string query(key.substr(0, key.find('\0')));
  const size_t wildcards = static_cast<size_t>(std::count_if(
      query.begin(), query.end(), [](char c) { return c == '*' || c == '?' || c == '['; }));
  const Walker walker(data_, size_, WalkBudget(size_, 2 + wildcards));
  Node root;
  if (!walker.Decode(root_, &root)) return 0;
  WildSearch search(walker, size_, wildcards, query);
  search.Run(root);
  std::vector<Found>& found = search.found();
  // kmod inserts each value before the first one of equal or higher priority.
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.seq > b.seq;
  });
  for (const Found& f : found) out->push_back({f.priority, f.value});
  return search.fnmatch_calls();
}

namespace {

// kmod's index dump, with budgets so that a corrupt (cyclic or shared) child table cannot make
// it run for ever or print without end: depmod's nodes and value records are distinct, so a
// good index never visits more than one node per byte of its image, never prints more value
// records than fit in it (five bytes each at least: a priority and a NUL) and never more value
// bytes than it holds. A shared node of many values reached by many paths stops at the budget.
class Dumper {
 public:
  Dumper(const Walker& walker, size_t image_size, std::string* out)
      : walker_(walker),
        nodes_left_(image_size + 1),
        values_left_(image_size / 5 + 1),
        value_bytes_left_(image_size),
        out_(out) {}

  // kmod prints keys of any length; the depth bounds the recursion, the walker's budget the
  // bytes a key can gather.
  void Visit(const Node& node, std::string* key, size_t depth = 0) {
    if (nodes_left_ == 0 || depth > kMaxDepth) return;
    --nodes_left_;
    const size_t base = key->size();
    key->append(node.prefix.data(), node.prefix.size());
    walker_.ForEachValue(node, [&](uint32_t, absl::string_view value) {
      if (values_left_ == 0 || value.size() > value_bytes_left_) {
        values_left_ = 0;
        return;
      }
      --values_left_;
      value_bytes_left_ -= value.size();
      absl::StrAppend(out_, *key, " ", value, "\n");
    });
    if (node.children != nullptr) {
      for (unsigned ch = node.first; ch <= node.last; ++ch) {
        Node child;
        if (!walker_.Child(node, static_cast<unsigned char>(ch), &child)) continue;
        key->push_back(static_cast<char>(ch));
        Visit(child, key, depth + 1);
        key->pop_back();
      }
    }
    key->resize(base);
  }

 private:
  const Walker& walker_;
  size_t nodes_left_;
  size_t values_left_;
  size_t value_bytes_left_;
  std::string* out_;
};

}  // namespace

void KmodIndex::Dump(absl::string_view prefix, std::string* out) const {
  const Walker walker(data_, size_, WalkBudget(size_, 2));
  Node root;
  if (!walker.Decode(root_, &root)) return;
  std::string key(prefix);
  Dumper(walker, size_, out).Visit(root, &key);
}

}  // namespace hotring::hotplug::modules
