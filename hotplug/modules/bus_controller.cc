#include "hotplug/modules/bus_controller.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace hotring::hotplug::modules {
namespace {

// Two hex digits after `tag` at `at`, as the kernel's PCI modalias writes them.
bool HexByteAt(absl::string_view text, size_t at, absl::string_view tag, uint32_t& value) {
  if (text.size() < at + tag.size() + 2 || text.substr(at, tag.size()) != tag) return false;
  const absl::string_view digits = text.substr(at + tag.size(), 2);
  if (!absl::ascii_isxdigit(static_cast<unsigned char>(digits[0])) ||
      !absl::ascii_isxdigit(static_cast<unsigned char>(digits[1]))) {
    return false;
  }
  return absl::SimpleHexAtoi(digits, &value);
}

bool PciController(absl::string_view modalias) {
  // pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X: the class fields sit at fixed offsets.
  constexpr size_t kBaseClass = 4 + 9 + 9 + 10 + 10;
  uint32_t base = 0;
  uint32_t sub = 0;
  if (!HexByteAt(modalias, kBaseClass, "bc", base) ||
      !HexByteAt(modalias, kBaseClass + 4, "sc", sub)) {
    return false;
  }
  return (base == 0x0c && sub == 0x03) || (base == 0x08 && sub == 0x05);
}

bool OfController(absl::string_view modalias) {
  // of:N<name>T<type>C<compatible>C<compatible>...: after the type, each compatible follows
  // a 'C' (compatibles are lower case by convention; an upper-case 'C' in one only splits it,
  // and the words below are still found in its parts).
  const size_t type = modalias.find('T');
  if (type == absl::string_view::npos) return false;
  bool first = true;
  for (absl::string_view compatible : absl::StrSplit(modalias.substr(type + 1), 'C')) {
    if (first) {  // the type itself
      first = false;
      continue;
    }
    const size_t comma = compatible.find(',');
    const absl::string_view device =
        comma == absl::string_view::npos ? compatible : compatible.substr(comma + 1);
    for (absl::string_view word : {"xhci", "ehci", "ohci", "uhci", "dwc2", "dwc3", "musb",
                                   "sdhci", "dw-mshc", "mmc"}) {
      if (absl::StrContains(device, word)) return true;
    }
  }
  return false;
}

}  // namespace

bool IsEnumeratingBusController(absl::string_view modalias) {
  if (absl::StartsWith(modalias, "pci:")) return PciController(modalias);
  if (absl::StartsWith(modalias, "of:")) return OfController(modalias);
  return false;
}

}  // namespace hotring::hotplug::modules
