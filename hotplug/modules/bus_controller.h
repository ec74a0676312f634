// Which devices are bus controllers whose own devices are found only after their driver has
// bound, by an enumeration that mostly waits on timers in a kernel thread of its own: USB host
// controllers (the hub thread's port reset and debounce, then each device's descriptors) and
// SD/MMC hosts (the card detection work). Their drivers are loaded ahead of the others: the
// sooner one is in, the more of that waiting overlaps the other drivers' loads instead of
// following them.
//
// Storage controllers (ATA, SCSI) are left out on purpose: their drivers start the port probe
// and the disk scan as async work, and the kernel ends every module load that does not probe
// asynchronously itself by waiting for all async work (do_init_module's
// async_synchronize_full()); an early ata_piix makes the USB chain's loads (usb_common,
// usbcore, xhci_hcd) each wait for the ATA probe, and a one-vCPU boot settled 0.2-0.7 s later
// than with the USB controller alone first (docs/benchmarks.md).
// Pure: a MODALIAS in, a yes or no out.
#ifndef HOTRING_HOTPLUG_MODULES_BUS_CONTROLLER_H_
#define HOTRING_HOTPLUG_MODULES_BUS_CONTROLLER_H_

#include "absl/strings/string_view.h"

namespace hotring::hotplug::modules {

// True for
// - PCI functions (`pci:v…d…sv…sd…bcXXscXXiXX`) of class 0x0c03 (USB) and 0x0805 (SD host);
// - device-tree devices (`of:N…T…C…`) with a compatible naming a USB host or OTG controller or
//   an SD/MMC host (the boards' equivalents of the PCI classes above).
// Anything else, or a malformed MODALIAS, is false.
[[nodiscard]] bool IsEnumeratingBusController(absl::string_view modalias);

}  // namespace hotring::hotplug::modules

#endif  // HOTRING_HOTPLUG_MODULES_BUS_CONTROLLER_H_
