#include "hotplug/udev/hwdb_builtin.h"

#include <fnmatch.h>

#include <cstdint>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"

namespace hotring::hotplug::udev {
namespace {

// sd-device's parse of a hex attribute (safe_atoux16: optional "0x", at most 0xffff).
std::optional<uint16_t> ParseHex16(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) text.remove_prefix(2);
  uint32_t v = 0;
  if (text.empty() || !absl::SimpleHexAtoi(text, &v) || v > 0xffff) return std::nullopt;
  return static_cast<uint16_t>(v);
}

// The lookup string of a usb_device without MODALIAS.
std::optional<std::string> UsbModalias(const SysfsView& sysfs, absl::string_view devpath) {
  const std::optional<std::string> vendor = sysfs.Attribute(devpath, "idVendor");
  const std::optional<std::string> product = sysfs.Attribute(devpath, "idProduct");
  if (!vendor.has_value() || !product.has_value()) return std::nullopt;
  const std::optional<uint16_t> v = ParseHex16(*vendor);
  const std::optional<uint16_t> p = ParseHex16(*product);
  if (!v.has_value() || !p.has_value()) return std::nullopt;
  const std::string name = sysfs.Attribute(devpath, "product").value_or("");
  std::string out = absl::StrFormat("usb:v%04Xp%04X:%s", *v, *p, name);
  // udevd formats it into a LINE_MAX buffer.
  if (out.size() > 2047) out.resize(2047);
  return out;
}

}  // namespace

absl::StatusOr<Properties> HwdbLookupProperties(const Hwdb& hwdb, absl::string_view prefix,
                                                absl::string_view modalias,
                                                absl::string_view filter) {
  const std::string lookup = absl::StrCat(prefix, modalias);
  HOTRING_ASSIGN_OR_RETURN(const std::vector<HwdbProperty> found, hwdb.Lookup(lookup));
  const std::string filter_c(filter);
  Properties out;
  for (const HwdbProperty& p : found) {
    if (!filter.empty() && ::fnmatch(filter_c.c_str(), std::string(p.key).c_str(), FNM_NOESCAPE) != 0) {
      continue;
    }
    out.emplace_back(std::string(p.key), std::string(p.value));
  }
  return out;
}

absl::StatusOr<Properties> HwdbBuiltin(const BuiltinDevice& device, absl::Span<const std::string> argv,
                                       const Hwdb& hwdb) {
  static constexpr LongOption kOptions[] = {{"filter", true, 'f'},
                                            {"device", true, 'd'},
                                            {"subsystem", true, 's'},
                                            {"lookup-prefix", true, 'p'}};
  const ParsedArgs args = ParseBuiltinArgs(argv, "f:d:s:p:", kOptions);
  std::string filter, subsystem, prefix;
  bool have_subsystem = false;
  for (const auto& [letter, value] : args.options) {
    switch (letter) {
      case 'f':
        filter = value;
        break;
      case 'd':
        return absl::InvalidArgumentError("hwdb: --device is not supported");
      case 's':
        subsystem = value;
        have_subsystem = true;
        break;
      case 'p':
        prefix = value;
        break;
      default:
        break;
    }
  }
  if (!args.operands.empty()) {
    HOTRING_ASSIGN_OR_RETURN(Properties out,
                             HwdbLookupProperties(hwdb, prefix, args.operands.front(), filter));
    if (out.empty()) return absl::NotFoundError("hwdb: no entry found");
    return out;
  }
  // The device, then its parents, until one's lookup finds something.
  std::optional<std::string> at(device.devpath);
  bool first = true;
  while (at.has_value()) {
    const std::string path = *at;
    const bool self = first;
    first = false;
    at = ParentOf(device.sysfs, path);
    const std::string dsubsys = self ? device.Subsystem() : SubsystemOf(device.sysfs, path);
    if (dsubsys.empty()) continue;
    if (have_subsystem && dsubsys != subsystem) continue;
    std::optional<std::string> modalias;
    if (self) {
      if (const auto m = device.Property("MODALIAS"); m.has_value()) modalias = std::string(*m);
    } else {
      modalias = UeventValue(device.sysfs, path, "MODALIAS");
    }
    bool last = false;
    if (dsubsys == "usb" && (self ? device.DevType() : DevTypeOf(device.sysfs, path)) == "usb_device") {
      if (!modalias.has_value()) modalias = UsbModalias(device.sysfs, path);
      // Its parents are hubs.
      last = true;
    }
    if (!modalias.has_value()) continue;
    HOTRING_ASSIGN_OR_RETURN(Properties out, HwdbLookupProperties(hwdb, prefix, *modalias, filter));
    if (!out.empty()) return out;
    if (last) break;
  }
  return absl::NotFoundError("hwdb: no entry found");
}

}  // namespace hotring::hotplug::udev
