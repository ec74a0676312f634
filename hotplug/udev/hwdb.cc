#include "hotplug/udev/hwdb.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"
#include "hotplug/udev/hwdb_glob.h"

namespace hotring::hotplug::udev {
namespace {

constexpr char kSignature[8] = {'K', 'S', 'L', 'P', 'H', 'H', 'R', 'H'};
// The header: signature, then nine little-endian u64 (tool version, file size, header size,
// node size, child entry size, value entry size, root node offset, nodes length, strings
// length).
constexpr size_t kHeaderSize = 8 + 9 * 8;
// The fields of the on-disk records hotring reads; later versions may make them longer (the
// header gives their sizes), never shorter.
constexpr uint64_t kNodeFields = 24;        // prefix offset, children count + padding, values count
constexpr uint64_t kChildFields = 16;       // character + padding, child offset
constexpr uint64_t kValueFields = 16;       // key offset, value offset
constexpr uint64_t kValueFieldsV2 = 32;     // + file name offset, line number, file priority
// No record of a real file is anywhere near this; it keeps the size arithmetic far from overflow.
constexpr uint64_t kMaxRecordSize = 4096;
// sd-hwdb builds the glob pattern in a LINE_MAX buffer and gives up at 2047 bytes.
constexpr size_t kMaxPattern = 2046;

uint64_t Load64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint32_t Load32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint16_t Load16(const char* p) {
  return static_cast<uint16_t>(static_cast<unsigned char>(p[0]) |
                               (static_cast<unsigned char>(p[1]) << 8));
}

absl::Status Corrupt(absl::string_view what, uint64_t offset) {
  return absl::DataLossError(absl::StrCat("hwdb: ", what, " at offset ", offset));
}

// A node record, checked to lie inside the file with its children and values.
struct Node {
  uint64_t offset = 0;
  uint64_t prefix = 0;  // string offset; 0: none
  uint64_t children = 0;
  uint64_t values = 0;
  uint64_t children_at = 0;
  uint64_t values_at = 0;
};

// One property as kept during a lookup, with what decides which of two entries wins.
struct Kept {
  absl::string_view key;
  absl::string_view value;
  uint64_t filename = 0;
  uint32_t line = 0;
  uint16_t priority = 0;
};

// One lookup's state.
class Walk {
 public:
  Walk(const char* data, size_t size, uint64_t node_size, uint64_t child_size, uint64_t value_size,
       absl::string_view search, const HwdbLimits& limits)
      : data_(data),
        size_(size),
        node_size_(node_size),
        child_size_(child_size),
        value_size_(value_size),
        search_(search),
        limits_(limits) {}

  absl::Status Search(uint64_t root) {
    uint64_t offset = root;
    size_t i = 0;
    for (;;) {
      HOTRING_ASSIGN_OR_RETURN(const Node node, ReadNode(offset));
      if (node.prefix != 0) {
        HOTRING_ASSIGN_OR_RETURN(const absl::string_view prefix, String(node.prefix));
        for (size_t p = 0; p < prefix.size(); ++p) {
          const char c = prefix[p];
          if (c == '*' || c == '?' || c == '[') {
            pattern_.clear();
            return Match(node, p, i + p);
          }
          if (i + p >= search_.size() || c != search_[i + p]) return absl::OkStatus();
        }
        i += prefix.size();
      }
      for (const char glob : {'*', '?', '['}) {
        HOTRING_ASSIGN_OR_RETURN(const std::optional<uint64_t> child, Child(node, glob));
        if (!child.has_value()) continue;
        HOTRING_ASSIGN_OR_RETURN(const Node child_node, ReadNode(*child));
        pattern_.assign(1, glob);
        HOTRING_RETURN_IF_ERROR(Match(child_node, 0, i));
      }
      if (i == search_.size()) return AddValues(node);
      HOTRING_ASSIGN_OR_RETURN(const std::optional<uint64_t> next, Child(node, search_[i]));
      if (!next.has_value()) return absl::OkStatus();
      offset = *next;
      ++i;
    }
  }

  std::vector<HwdbProperty> Result() const {
    std::vector<HwdbProperty> out;
    out.reserve(kept_.size());
    for (const Kept& k : kept_) out.push_back({k.key, k.value});
    return out;
  }

 private:
  // Every key below `node` (its prefix from `from` on, then its children), as a pattern
  // matched against the search string from `at` on; `pattern_` holds what led here.
  absl::Status Match(const Node& start, size_t from, size_t at) {
    const absl::string_view subject = search_.substr(at);
    struct Frame {
      Node node;
      size_t added;  // bytes this frame put on the pattern (its child character included)
      uint64_t next_child;
    };
    std::vector<Frame> stack;
    {
      HOTRING_ASSIGN_OR_RETURN(absl::string_view prefix, PrefixOf(start));
      if (from > prefix.size()) return Corrupt("glob offset", start.offset);
      prefix.remove_prefix(from);
      HOTRING_RETURN_IF_ERROR(Append(prefix));
      // The glob character the caller put on the pattern stays for the caller to remove.
      stack.push_back({start, prefix.size(), 0});
    }
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next_child < top.node.children) {
        const char* entry = data_ + top.node.children_at + top.next_child * child_size_;
        ++top.next_child;
        HOTRING_ASSIGN_OR_RETURN(const Node child, ReadNode(Load64(entry + 8)));
        HOTRING_ASSIGN_OR_RETURN(const absl::string_view prefix, PrefixOf(child));
        HOTRING_RETURN_IF_ERROR(Append(absl::string_view(entry, 1)));
        HOTRING_RETURN_IF_ERROR(Append(prefix));
        stack.push_back({child, prefix.size() + 1, 0});
        continue;
      }
      if (top.node.values != 0) {
        match_steps_ += (pattern_.size() + 1) * (subject.size() + 1);
        if (match_steps_ > limits_.max_match_steps) {
          return absl::ResourceExhaustedError("hwdb: lookup matches too many long keys");
        }
      }
      if (top.node.values != 0 && HwdbGlobMatch(pattern_, subject)) {
        HOTRING_RETURN_IF_ERROR(AddValues(top.node));
      }
      pattern_.resize(pattern_.size() - top.added);
      stack.pop_back();
    }
    return absl::OkStatus();
  }

  absl::Status Append(absl::string_view s) {
    if (pattern_.size() + s.size() > kMaxPattern) {
      return absl::ResourceExhaustedError("hwdb: a key longer than 2046 bytes");
    }
    pattern_.append(s.data(), s.size());
    return absl::OkStatus();
  }

  absl::StatusOr<Node> ReadNode(uint64_t offset) {
    if (++visited_ > limits_.max_nodes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("hwdb: lookup visits more than ", limits_.max_nodes, " nodes"));
    }
    if (offset < kHeaderSize || offset > size_ || node_size_ > size_ - offset) {
      return Corrupt("node outside the file", offset);
    }
    const char* p = data_ + offset;
    Node node{.offset = offset,
              .prefix = Load64(p),
              .children = static_cast<unsigned char>(p[8]),
              .values = Load64(p + 16)};
    node.children_at = offset + node_size_;
    if (node.children * child_size_ > size_ - node.children_at) {
      return Corrupt("children outside the file", offset);
    }
    node.values_at = node.children_at + node.children * child_size_;
    if (node.values > (size_ - node.values_at) / value_size_) {
      return Corrupt("values outside the file", offset);
    }
    return node;
  }

  absl::StatusOr<absl::string_view> String(uint64_t offset) const {
    if (offset >= size_) return Corrupt("string outside the file", offset);
    const void* nul = std::memchr(data_ + offset, '\0', size_ - offset);
    if (nul == nullptr) return Corrupt("unterminated string", offset);
    return absl::string_view(data_ + offset, static_cast<const char*>(nul) - (data_ + offset));
  }

  absl::StatusOr<absl::string_view> PrefixOf(const Node& node) const {
    if (node.prefix == 0) return absl::string_view();
    return String(node.prefix);
  }

  // The child of `node` for character `c`: a binary search of its children, which the file
  // keeps sorted (an unsorted array only gives a wrong answer, never a read outside it).
  absl::StatusOr<std::optional<uint64_t>> Child(const Node& node, char c) const {
    uint64_t lo = 0;
    uint64_t hi = node.children;
    const unsigned char want = static_cast<unsigned char>(c);
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      const char* entry = data_ + node.children_at + mid * child_size_;
      const unsigned char have = static_cast<unsigned char>(entry[0]);
      if (have == want) return std::optional<uint64_t>(Load64(entry + 8));
      if (have < want) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return std::optional<uint64_t>();
  }

  absl::Status AddValues(const Node& node) {
    for (uint64_t n = 0; n < node.values; ++n) {
      const char* entry = data_ + node.values_at + n * value_size_;
      HOTRING_ASSIGN_OR_RETURN(absl::string_view key, String(Load64(entry)));
      // Keys without the leading space are reserved for future use: sd-hwdb skips them.
      if (key.empty() || key[0] != ' ') continue;
      key.remove_prefix(1);
      HOTRING_ASSIGN_OR_RETURN(const absl::string_view value, String(Load64(entry + 8)));
      Kept kept{.key = key, .value = value};
      const bool v2 = value_size_ >= kValueFieldsV2;
      if (v2) {
        kept.filename = Load64(entry + 16);
        kept.line = Load32(entry + 24);
        kept.priority = Load16(entry + 28);
      }
      auto [it, inserted] = index_.try_emplace(key, kept_.size());
      if (inserted) {
        if (kept_.size() >= limits_.max_properties) {
          return absl::ResourceExhaustedError(
              absl::StrCat("hwdb: lookup finds more than ", limits_.max_properties, " properties"));
        }
        kept_.push_back(kept);
        continue;
      }
      Kept& old = kept_[it->second];
      if (v2) {
        // A duplicate loses to an entry of a higher-priority file, or of a later line of the
        // same file. Files of a v2 database (priority 0) are compared by the offset of their
        // name, which follows the order they were read in.
        const bool lower = kept.priority == 0
                               ? (kept.filename < old.filename ||
                                  (kept.filename == old.filename && kept.line < old.line))
                               : (kept.priority < old.priority ||
                                  (kept.priority == old.priority && kept.line < old.line));
        if (lower) continue;
      }
      // Replaced in place: the property keeps its first position.
      old = kept;
    }
    return absl::OkStatus();
  }

  const char* data_;
  size_t size_;
  uint64_t node_size_;
  uint64_t child_size_;
  uint64_t value_size_;
  absl::string_view search_;
  const HwdbLimits& limits_;
  std::string pattern_;
  size_t visited_ = 0;
  uint64_t match_steps_ = 0;
  std::vector<Kept> kept_;
  absl::flat_hash_map<absl::string_view, size_t> index_;
};

}  // namespace

Hwdb::Hwdb(Hwdb&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)),
      bytes_(std::move(other.bytes_)),
      node_size_(other.node_size_),
      child_entry_size_(other.child_entry_size_),
      value_entry_size_(other.value_entry_size_),
      root_(other.root_) {}

Hwdb& Hwdb::operator=(Hwdb&& other) noexcept {
  if (this != &other) {
    Unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
    bytes_ = std::move(other.bytes_);
    node_size_ = other.node_size_;
    child_entry_size_ = other.child_entry_size_;
    value_entry_size_ = other.value_entry_size_;
    root_ = other.root_;
  }
  return *this;
}

Hwdb::~Hwdb() { Unmap(); }

void Hwdb::Unmap() {
  if (mapped_ && data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
  data_ = nullptr;
  mapped_ = false;
}

absl::Status Hwdb::CheckHeader() {
  if (size_ < kHeaderSize) return absl::InvalidArgumentError("hwdb: shorter than its header");
  if (std::memcmp(data_, kSignature, sizeof(kSignature)) != 0) {
    return absl::InvalidArgumentError("hwdb: not a hwdb.bin (signature)");
  }
  if (Load64(data_ + 16) != size_) {
    return absl::InvalidArgumentError(absl::StrCat("hwdb: the header says ", Load64(data_ + 16),
                                                   " bytes, the file has ", size_));
  }
  node_size_ = Load64(data_ + 32);
  child_entry_size_ = Load64(data_ + 40);
  value_entry_size_ = Load64(data_ + 48);
  root_ = Load64(data_ + 56);
  if (node_size_ < kNodeFields || node_size_ > kMaxRecordSize || child_entry_size_ < kChildFields ||
      child_entry_size_ > kMaxRecordSize || value_entry_size_ < kValueFields ||
      value_entry_size_ > kMaxRecordSize) {
    return absl::InvalidArgumentError(absl::StrCat("hwdb: impossible record sizes (node ", node_size_,
                                                   ", child ", child_entry_size_, ", value ",
                                                   value_entry_size_, ")"));
  }
  if (root_ < kHeaderSize || root_ > size_ || node_size_ > size_ - root_) {
    return absl::InvalidArgumentError("hwdb: root node outside the file");
  }
  return absl::OkStatus();
}

absl::StatusOr<Hwdb> Hwdb::Open(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("open ", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(absl::StrCat("fstat ", path));
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(path + ": not a regular file");
  Hwdb db;
  db.path_ = path;
  // Checked before mmap, which refuses a length of 0.
  if (static_cast<uint64_t>(st.st_size) < kHeaderSize) {
    return absl::InvalidArgumentError(path + ": hwdb: shorter than its header");
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return ErrnoStatus(absl::StrCat("mmap ", path));
  db.data_ = static_cast<const char*>(map);
  db.size_ = static_cast<size_t>(st.st_size);
  db.mapped_ = true;
  // Lookups touch a few scattered pages: read-ahead would only fill memory.
  (void)::madvise(map, db.size_, MADV_RANDOM);
  if (absl::Status header = db.CheckHeader(); !header.ok()) {
    return absl::Status(header.code(), absl::StrCat(path, ": ", header.message()));
  }
  return db;
}

absl::StatusOr<Hwdb> Hwdb::OpenFirst(absl::Span<const absl::string_view> paths) {
  for (const absl::string_view path : paths) {
    const std::string p(path);
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;
      return ErrnoStatus(absl::StrCat("stat ", p));
    }
    return Open(p);
  }
  return absl::NotFoundError("hwdb.bin does not exist");
}

absl::StatusOr<Hwdb> Hwdb::FromBytes(std::string bytes) {
  Hwdb db;
  db.bytes_ = std::make_unique<std::string>(std::move(bytes));
  db.data_ = db.bytes_->data();
  db.size_ = db.bytes_->size();
  HOTRING_RETURN_IF_ERROR(db.CheckHeader());
  return db;
}

absl::StatusOr<std::vector<HwdbProperty>> Hwdb::Lookup(absl::string_view modalias,
                                                       const HwdbLimits& limits) const {
  if (const size_t nul = modalias.find('\0'); nul != modalias.npos) modalias = modalias.substr(0, nul);
  Walk walk(data_, size_, node_size_, child_entry_size_, value_entry_size_, modalias, limits);
  HOTRING_RETURN_IF_ERROR(walk.Search(root_));
  return walk.Result();
}

}  // namespace hotring::hotplug::udev
