// Which devices are bus controllers whose own devices are found only after their driver has
// bound, by an enumeration that mostly waits on timers: USB host controllers (port reset and
// debounce, then each device's descriptors), storage controllers (link and port probing) and
// SD/MMC hosts (card detection). Their drivers are loaded ahead of the others: the sooner one
// is in, the more of that waiting overlaps the other drivers' loads instead of following them.
// Pure: a MODALIAS in, a yes or no out.
#ifndef HOTRING_HOTPLUG_MODULES_BUS_CONTROLLER_H_
#define HOTRING_HOTPLUG_MODULES_BUS_CONTROLLER_H_

#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {

// True for
// - PCI functions (`pci:v…d…sv…sd…bcXXscXXiXX`) of class 0x0c03 (USB), base class 0x01 (mass
//   storage: IDE, SCSI, SATA, NVMe, …) and class 0x0805 (SD host);
// - device-tree devices (`of:N…T…C…`) with a compatible naming a USB host or OTG controller,
//   an SD/MMC host or an AHCI controller (the boards' equivalents of the PCI classes above).
// Anything else, or a malformed MODALIAS, is false.
[[nodiscard]] bool IsEnumeratingBusController(absl::string_view modalias);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_BUS_CONTROLLER_H_
