// usb_id: vendor, model, serial and interface classes of a USB device, as udev names them.
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "hotplug/udev/builtins.h"
#include "hotplug/udev/escape.h"

namespace hotring::hotplug::udev {
namespace {

// udev's buffers: 64 bytes for vendor, model and revision (63 characters).
constexpr size_t kShortField = 63;
constexpr size_t kNameField = 511;  // UDEV_NAME_SIZE - 1

absl::string_view InterfaceType(unsigned cls) {
  switch (cls) {
    case 1: return "audio";
    case 3: return "hid";
    case 6: return "media";
    case 7: return "printer";
    case 8: return "storage";
    case 9: return "hub";
    case 0x0e: return "video";
    default: return "generic";
  }
}

absl::string_view MassStorageType(int subclass) {
  switch (subclass) {
    case 1: return "rbc";
    case 2: return "atapi";
    case 3: return "tape";
    case 4: return "floppy";
    case 6: return "scsi";
    default: return "generic";
  }
}

absl::string_view ScsiType(unsigned type) {
  switch (type) {
    case 0:
    case 0xe: return "disk";
    case 1: return "tape";
    case 4:
    case 7:
    case 0xf: return "optical";
    case 5: return "cd";
    default: return "generic";
  }
}

// ":ccsspp:" for every distinct interface descriptor in the device's `descriptors` file.
std::string PackedInterfaces(const SysfsView& view, const std::string& usb_device) {
  const std::optional<std::string> raw = view.Attribute(usb_device, "descriptors");
  if (!raw.has_value() || raw->size() < 18) return "";
  // Attribute() strips trailing '\n' bytes, which can be descriptor bytes: read what is there.
  const std::string& buf = *raw;
  std::string out;
  constexpr size_t kIfDescriptor = 9;
  size_t pos = 0;
  while (pos + kIfDescriptor < buf.size() && out.size() + 7 < kNameField - 2) {
    const uint8_t length = static_cast<uint8_t>(buf[pos]);
    if (length < 3) break;
    if (length > buf.size() - kIfDescriptor) return "";  // corrupt: udev gives up too
    const uint8_t type = static_cast<uint8_t>(buf[pos + 1]);
    const size_t at = pos;
    pos += length;
    if (type != 0x04) continue;  // USB_DT_INTERFACE
    const std::string one = absl::StrFormat(":%02x%02x%02x", static_cast<uint8_t>(buf[at + 5]),
                                            static_cast<uint8_t>(buf[at + 6]),
                                            static_cast<uint8_t>(buf[at + 7]));
    if (out.find(one) != std::string::npos) continue;
    out += one;
  }
  if (!out.empty()) out += ":";
  return out;
}

}  // namespace

Properties UsbId(const SysfsView& view, absl::string_view devpath) {
  Properties out;
  std::string vendor, vendor_enc, model, model_enc, revision, serial_short, type, instance;
  std::optional<std::string> ifnum, driver;
  std::string usb_device;
  std::string packed;
  if (DevTypeOf(view, devpath) == "usb_device") {
    usb_device = std::string(devpath);
    packed = PackedInterfaces(view, usb_device);
  } else {
    const std::optional<std::string> interface = ParentWith(view, devpath, "usb", "usb_interface");
    if (!interface.has_value()) return out;
    ifnum = view.Attribute(*interface, "bInterfaceNumber");
    driver = view.LinkName(*interface, "driver");
    const std::optional<std::string> if_class = view.Attribute(*interface, "bInterfaceClass");
    unsigned cls = 0;
    if (!if_class.has_value() || !absl::SimpleHexAtoi(*if_class, &cls)) return out;
    int protocol = 0;
    if (cls == 8) {
      if (std::optional<std::string> sub = view.Attribute(*interface, "bInterfaceSubClass");
          sub.has_value()) {
        if (!absl::SimpleAtoi(*sub, &protocol)) protocol = 0;
        type = std::string(MassStorageType(protocol));
      }
    } else {
      type = std::string(InterfaceType(cls));
    }
    std::optional<std::string> dev = ParentWith(view, *interface, "usb", "usb_device");
    if (!dev.has_value()) return out;
    usb_device = *dev;
    packed = PackedInterfaces(view, usb_device);
    // Mass storage speaking SCSI or ATAPI: the SCSI inquiry names the device.
    if (protocol == 6 || protocol == 2) {
      const std::optional<std::string> scsi = ParentWith(view, devpath, "scsi", "scsi_device");
      std::vector<absl::string_view> hctl;
      if (scsi.has_value()) {
        const std::string name = SysnameOf(*scsi);
        hctl = absl::StrSplit(name, ':');
        const auto v = view.Attribute(*scsi, "vendor");
        const auto m = view.Attribute(*scsi, "model");
        const auto t = view.Attribute(*scsi, "type");
        const auto r = view.Attribute(*scsi, "rev");
        int target = 0, lun = 0;
        if (hctl.size() == 4 && absl::SimpleAtoi(hctl[2], &target) &&
            absl::SimpleAtoi(hctl[3], &lun) && v && m && t && r) {
          vendor_enc = EncodeDevnodeName(*v);
          vendor = ReplaceChars(ReplaceWhitespace(*v, kShortField));
          model_enc = EncodeDevnodeName(*m);
          model = ReplaceChars(ReplaceWhitespace(*m, kShortField));
          unsigned scsi_type = 0;
          type = std::string(absl::SimpleAtoi(*t, &scsi_type) ? ScsiType(scsi_type) : "generic");
          revision = ReplaceChars(ReplaceWhitespace(*r, kShortField));
          instance = absl::StrCat(target, ":", lun);
        }
      }
    }
  }
  const std::optional<std::string> vendor_id = view.Attribute(usb_device, "idVendor");
  const std::optional<std::string> product_id = view.Attribute(usb_device, "idProduct");
  if (!vendor_id.has_value() || !product_id.has_value()) return out;
  if (vendor.empty()) {
    const std::string v = view.Attribute(usb_device, "manufacturer").value_or(*vendor_id);
    vendor_enc = EncodeDevnodeName(v);
    vendor = ReplaceChars(ReplaceWhitespace(v, kShortField));
  }
  if (model.empty()) {
    const std::string m = view.Attribute(usb_device, "product").value_or(*product_id);
    model_enc = EncodeDevnodeName(m);
    model = ReplaceChars(ReplaceWhitespace(m, kShortField));
  }
  if (revision.empty()) {
    if (std::optional<std::string> r = view.Attribute(usb_device, "bcdDevice"); r.has_value()) {
      revision = ReplaceChars(ReplaceWhitespace(*r, kShortField));
    }
  }
  if (std::optional<std::string> s = view.Attribute(usb_device, "serial"); s.has_value()) {
    // Serials with control characters, non-ASCII or ',' are ignored (as Windows does).
    bool usable = true;
    for (const char c : *s) {
      const uint8_t b = static_cast<uint8_t>(c);
      if (b < 0x20 || b > 0x7f || c == ',') usable = false;
    }
    if (usable) serial_short = ReplaceChars(ReplaceWhitespace(*s, kNameField));
  }
  std::string serial = absl::StrCat(vendor, "_", model);
  if (!serial_short.empty()) absl::StrAppend(&serial, "_", serial_short);
  if (!instance.empty()) absl::StrAppend(&serial, "-", instance);
  serial = serial.substr(0, 255);

  for (absl::string_view prefix : {"ID_", "ID_USB_"}) {
    if (prefix == "ID_") out.emplace_back("ID_BUS", "usb");
    out.emplace_back(absl::StrCat(prefix, "MODEL"), model);
    out.emplace_back(absl::StrCat(prefix, "MODEL_ENC"), model_enc);
    out.emplace_back(absl::StrCat(prefix, "MODEL_ID"), *product_id);
    out.emplace_back(absl::StrCat(prefix, "SERIAL"), serial);
    if (!serial_short.empty()) out.emplace_back(absl::StrCat(prefix, "SERIAL_SHORT"), serial_short);
    out.emplace_back(absl::StrCat(prefix, "VENDOR"), vendor);
    out.emplace_back(absl::StrCat(prefix, "VENDOR_ENC"), vendor_enc);
    out.emplace_back(absl::StrCat(prefix, "VENDOR_ID"), *vendor_id);
    out.emplace_back(absl::StrCat(prefix, "REVISION"), revision);
    if (!type.empty()) out.emplace_back(absl::StrCat(prefix, "TYPE"), type);
    if (!instance.empty()) out.emplace_back(absl::StrCat(prefix, "INSTANCE"), instance);
  }
  if (!packed.empty()) out.emplace_back("ID_USB_INTERFACES", packed);
  if (ifnum.has_value()) out.emplace_back("ID_USB_INTERFACE_NUM", *ifnum);
  if (driver.has_value()) out.emplace_back("ID_USB_DRIVER", *driver);
  return out;
}

}  // namespace hotring::hotplug::udev
