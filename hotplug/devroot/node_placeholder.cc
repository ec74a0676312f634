#include "hotplug/devroot/node_placeholder.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::devroot {
namespace {

constexpr absl::string_view kMagic = "hotring-node";
// Longer than any placeholder: a bigger file is never one, and is not read whole.
constexpr size_t kMaxPlaceholderBytes = 96;

bool ParsePair(absl::string_view text, uint32_t& a, uint32_t& b) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  return parts.size() == 2 && absl::SimpleAtoi(parts[0], &a) && absl::SimpleAtoi(parts[1], &b);
}

}  // namespace

std::string FormatNodePlaceholder(const PlaceholderNode& node) {
  return absl::StrFormat("%s %s %u:%u %u:%u %04o\n", kMagic, node.block ? "block" : "char",
                         node.major, node.minor, node.uid, node.gid, node.mode & 07777);
}

std::optional<PlaceholderNode> ParseNodePlaceholder(absl::string_view text) {
  if (text.empty() || text.back() != '\n') return std::nullopt;
  text.remove_suffix(1);
  const std::vector<absl::string_view> f = absl::StrSplit(text, ' ');
  if (f.size() != 5 || f[0] != kMagic || (f[1] != "block" && f[1] != "char")) return std::nullopt;
  PlaceholderNode node;
  node.block = f[1] == "block";
  if (!ParsePair(f[2], node.major, node.minor) || !ParsePair(f[3], node.uid, node.gid)) {
    return std::nullopt;
  }
  if (f[4].size() != 4) return std::nullopt;
  const std::string mode(f[4]);
  char* end = nullptr;
  const unsigned long value = std::strtoul(mode.c_str(), &end, 8);
  if (*end != '\0' || value > 07777) return std::nullopt;
  node.mode = static_cast<uint32_t>(value);
  return node;
}

bool StatAsNode(int dir_fd, const char* leaf, struct stat& st) {
  if (!S_ISREG(st.st_mode) || st.st_size <= 0 ||
      static_cast<size_t>(st.st_size) > kMaxPlaceholderBytes) {
    return false;
  }
  const UniqueFd fd(::openat(dir_fd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return false;
  char buffer[kMaxPlaceholderBytes + 1];
  const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
  if (n <= 0) return false;
  const std::optional<PlaceholderNode> node =
      ParseNodePlaceholder(absl::string_view(buffer, static_cast<size_t>(n)));
  if (!node.has_value()) return false;
  st.st_mode = (node->block ? S_IFBLK : S_IFCHR) | node->mode;
  st.st_rdev = makedev(node->major, node->minor);
  st.st_uid = node->uid;
  st.st_gid = node->gid;
  return true;
}

absl::Status WriteNodePlaceholderAt(int dir_fd, const char* leaf, const PlaceholderNode& node,
                                    bool exclusive) {
  const int flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC | (exclusive ? O_CREAT | O_EXCL : O_TRUNC);
  const UniqueFd fd(::openat(dir_fd, leaf, flags, 0644));
  if (!fd) return ErrnoStatus("open(placeholder)");
  const std::string text = FormatNodePlaceholder(node);
  // One short write into a file only we write: the whole text or an error.
  const ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n < 0) return ErrnoStatus("write(placeholder)");
  if (static_cast<size_t>(n) != text.size()) return ErrnoStatus("write(placeholder)", EIO);
  return absl::OkStatus();
}

}  // namespace hotring::hotplug::devroot
