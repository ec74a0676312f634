#include "hotplug/udev/blkid_builtin.h"

#include <blkid/blkid.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace hotring::hotplug::udev {
namespace {

// Owns a libblkid probe.
struct ProbeDeleter {
  void operator()(blkid_struct_probe* p) const { blkid_free_probe(p); }
};
using Probe = std::unique_ptr<blkid_struct_probe, ProbeDeleter>;

// udevd formats values into 256-byte buffers.
constexpr size_t kValueBuffer = 256;

std::string Safe(const char* value) {
  char s[kValueBuffer] = "";
  blkid_safe_string(value, s, sizeof(s));
  return s;
}

std::string Encoded(const char* value) {
  char s[kValueBuffer] = "";
  blkid_encode_string(value, s, sizeof(s));
  return s;
}

// One of libblkid's values as the builtin's property (or none).
void AddValue(Properties& out, absl::string_view name, const char* value) {
  static constexpr struct {
    absl::string_view blkid, udev;
  } kEncoded[] = {{"PART_ENTRY_NAME", "ID_PART_ENTRY_NAME"},   {"PART_ENTRY_TYPE", "ID_PART_ENTRY_TYPE"},
                  {"SYSTEM_ID", "ID_FS_SYSTEM_ID"},           {"PUBLISHER_ID", "ID_FS_PUBLISHER_ID"},
                  {"APPLICATION_ID", "ID_FS_APPLICATION_ID"}, {"BOOT_SYSTEM_ID", "ID_FS_BOOT_SYSTEM_ID"},
                  {"VOLUME_ID", "ID_FS_VOLUME_ID"},           {"LOGICAL_VOLUME_ID", "ID_FS_LOGICAL_VOLUME_ID"},
                  {"VOLUME_SET_ID", "ID_FS_VOLUME_SET_ID"},   {"DATA_PREPARER_ID", "ID_FS_DATA_PREPARER_ID"}};
  if (name == "TYPE") {
    out.emplace_back("ID_FS_TYPE", value);
  } else if (name == "USAGE") {
    out.emplace_back("ID_FS_USAGE", value);
  } else if (name == "VERSION") {
    out.emplace_back("ID_FS_VERSION", value);
  } else if (name == "UUID" || name == "UUID_SUB" || name == "LABEL") {
    const std::string key = absl::StrCat("ID_FS_", name);
    out.emplace_back(key, Safe(value));
    out.emplace_back(key + "_ENC", Encoded(value));
  } else if (name == "FSSIZE" || name == "FSLASTBLOCK" || name == "FSBLOCKSIZE") {
    out.emplace_back(absl::StrCat("ID_FS_", name.substr(2)), value);
  } else if (name == "PTTYPE") {
    out.emplace_back("ID_PART_TABLE_TYPE", value);
  } else if (name == "PTUUID") {
    out.emplace_back("ID_PART_TABLE_UUID", value);
  } else {
    for (const auto& e : kEncoded) {
      if (name == e.blkid) {
        out.emplace_back(std::string(e.udev), Encoded(value));
        return;
      }
    }
    if (absl::StartsWith(name, "PART_ENTRY_")) out.emplace_back(absl::StrCat("ID_", name), value);
  }
}

// probe_superblocks: a small whole disk is first probed for a partition table alone.
int ProbeSuperblocks(blkid_probe pr) {
  struct stat st;
  if (::fstat(blkid_probe_get_fd(pr), &st) != 0) return -errno;
  blkid_probe_enable_partitions(pr, 1);
  if (!S_ISCHR(st.st_mode) && blkid_probe_get_size(pr) <= 1024 * 1440 && blkid_probe_is_wholedisk(pr)) {
    blkid_probe_enable_superblocks(pr, 0);
    const int rc = blkid_do_fullprobe(pr);
    if (rc < 0) return rc;
    if (blkid_probe_lookup_value(pr, "PTTYPE", nullptr, nullptr) == 0) return 0;
  }
  blkid_probe_set_partitions_flags(pr, BLKID_PARTS_ENTRY_DETAILS);
  blkid_probe_enable_superblocks(pr, 1);
  return blkid_do_safeprobe(pr);
}

// find_gpt_root: on a disk holding the ESP or XBOOTLDR partition the boot loader came from,
// the first root partition of this architecture (the newest by label), unless marked no-auto.
std::optional<std::string> GptAutoRoot(blkid_probe pr, const std::string& loader_uuid) {
  static constexpr absl::string_view kEsp = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b";
  static constexpr absl::string_view kXbootldr = "bc13c2ff-59e6-4262-a352-b275fd6f7172";
#if defined(__x86_64__)
  static constexpr absl::string_view kRoot = "4f68bce3-e8cd-4db1-96e7-fbcaf984b709";
#elif defined(__aarch64__)
  static constexpr absl::string_view kRoot = "b921b045-1df0-41c3-af44-4c6f280d3fae";
#elif defined(__arm__)
  static constexpr absl::string_view kRoot = "69dad710-2ce4-4e3c-b16c-21a1d49abed3";
#else
  static constexpr absl::string_view kRoot = "";
#endif
  constexpr unsigned long long kNoAuto = 1ULL << 63;
  blkid_partlist list = blkid_probe_get_partitions(pr);
  if (list == nullptr || kRoot.empty()) return std::nullopt;
  bool found_loader = false;
  std::optional<std::string> root_id, root_label;
  const int n = blkid_partlist_numof_partitions(list);
  for (int i = 0; i < n; ++i) {
    blkid_partition part = blkid_partlist_get_partition(list, i);
    if (part == nullptr) continue;
    const char* id = blkid_partition_get_uuid(part);
    const char* type = blkid_partition_get_type_string(part);
    if (id == nullptr || type == nullptr) continue;
    const char* label = blkid_partition_get_name(part);
    const std::string t = absl::AsciiStrToLower(type);
    if (t == kEsp || t == kXbootldr) {
      if (absl::AsciiStrToLower(id) == absl::AsciiStrToLower(loader_uuid)) found_loader = true;
    } else if (t == kRoot) {
      if ((blkid_partition_get_flags(part) & kNoAuto) != 0) continue;
      const std::string l = label != nullptr ? label : "";
      if (!root_id.has_value() || ::strverscmp(l.c_str(), root_label->c_str()) > 0) {
        root_id = id;
        root_label = l;
      }
    }
  }
  if (found_loader && root_id.has_value()) return root_id;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<Properties> BlkidBuiltin(const BuiltinDevice& device, absl::Span<const std::string> argv,
                                        const BlkidContext& context) {
  Probe probe(blkid_new_probe());
  if (probe == nullptr) return absl::ResourceExhaustedError("blkid: cannot create a probe");
  static constexpr LongOption kOptions[] = {{"offset", true, 'o'}, {"hint", true, 'H'}, {"noraid", false, 'R'}};
  const ParsedArgs args = ParseBuiltinArgs(argv, "o:H:R", kOptions);
  int64_t offset = 0;
  bool noraid = false;
  for (const auto& [letter, value] : args.options) {
    if (letter == 'H') {
      if (blkid_probe_set_hint(probe.get(), value.c_str(), 0) < 0) {
        return absl::InvalidArgumentError(absl::StrCat("blkid: cannot use the hint '", value, "'"));
      }
    } else if (letter == 'o') {
      if (!absl::SimpleAtoi(value, &offset) || offset < 0) {
        return absl::InvalidArgumentError(absl::StrCat("blkid: invalid offset '", value, "'"));
      }
    } else if (letter == 'R') {
      noraid = true;
    }
  }
  blkid_probe_set_superblocks_flags(probe.get(), BLKID_SUBLKS_LABEL | BLKID_SUBLKS_UUID | BLKID_SUBLKS_TYPE |
                                                     BLKID_SUBLKS_SECTYPE | BLKID_SUBLKS_USAGE |
                                                     BLKID_SUBLKS_VERSION);
  if (noraid) blkid_probe_filter_superblocks_usage(probe.get(), BLKID_FLTR_NOTIN, BLKID_USAGE_RAID);
  const std::string devnode = device.DevNode();
  if (devnode.empty()) return absl::FailedPreconditionError("blkid: the device has no node");
  UniqueFd fd(::open(devnode.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    if (errno == ENOENT || errno == ENODEV || errno == ENXIO) return Properties{};
    return ErrnoStatus(absl::StrCat("open ", devnode));
  }
  if (blkid_probe_set_device(probe.get(), fd.get(), offset, 0) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("blkid: cannot probe ", devnode));
  }
  if (const int r = ProbeSuperblocks(probe.get()); r < 0) {
    return absl::DataLossError(absl::StrCat("blkid: probing ", devnode, " failed"));
  }
  const std::optional<absl::string_view> root_partition = device.Property("ID_PART_GPT_AUTO_ROOT_UUID");
  Properties out;
  bool is_gpt = false;
  const int n = blkid_probe_numof_values(probe.get());
  for (int i = 0; i < n; ++i) {
    const char* name = nullptr;
    const char* data = nullptr;
    if (blkid_probe_get_value(probe.get(), i, &name, &data, nullptr) < 0) continue;
    AddValue(out, name, data);
    if (absl::string_view(name) == "PTTYPE" && absl::string_view(data) == "gpt") is_gpt = true;
    if (root_partition.has_value() && absl::string_view(name) == "PART_ENTRY_UUID" && *root_partition == data) {
      out.emplace_back("ID_PART_GPT_AUTO_ROOT", "1");
    }
  }
  if (is_gpt && context.loader_partition_uuid.has_value()) {
    if (std::optional<std::string> root = GptAutoRoot(probe.get(), *context.loader_partition_uuid)) {
      out.emplace_back("ID_PART_GPT_AUTO_ROOT_UUID", *root);
    }
  }
  return out;
}

}  // namespace hotring::hotplug::udev
