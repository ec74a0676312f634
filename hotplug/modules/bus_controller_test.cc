#include "hotplug/modules/bus_controller.h"

#include "gtest/gtest.h"

namespace hotring::hotplug::modules {
namespace {

// The boot test guest's PCI functions, as its kernel writes their MODALIAS.
TEST(BusControllerTest, PciUsbAndSdHostsAreControllers) {
  // qemu-xhci: 0c0330
  EXPECT_TRUE(IsEnumeratingBusController(
      "pci:v00001B36d0000000Dsv00001AF4sd00001100bc0Csc03i30"));
  // an SD host controller: 0805
  EXPECT_TRUE(IsEnumeratingBusController(
      "pci:v00001B36d00000007sv00001AF4sd00001100bc08sc05i01"));
}

TEST(BusControllerTest, OtherPciFunctionsAreNot) {
  // Storage controllers: their probes are async work that every later load would wait for.
  // PIIX3 IDE: 0101 (ata_piix); an NVMe controller: 0108
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00008086d00007010sv00001AF4sd00001100bc01sc01i80"));
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00001B36d00000010sv00001AF4sd00001100bc01sc08i02"));
  // e1000 (0200), virtio-net (0200), PIIX4 ACPI (0680), the ISA bridge (0601), VGA (0300)
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00"));
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00001AF4d00001000sv00001AF4sd00000001bc02sc00i00"));
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00008086d00007113sv00001AF4sd00001100bc06sc80i00"));
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00008086d00007000sv00001AF4sd00001100bc06sc01i00"));
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00001234d00001111sv00001AF4sd00001100bc03sc00i00"));
  // A serial bus controller that is not USB (SMBus, 0c05).
  EXPECT_FALSE(IsEnumeratingBusController(
      "pci:v00008086d00002930sv00001AF4sd00001100bc0Csc05i00"));
}

TEST(BusControllerTest, DeviceTreeHostControllersAre) {
  EXPECT_TRUE(IsEnumeratingBusController("of:NusbT(null)Cgeneric-xhci"));
  EXPECT_TRUE(IsEnumeratingBusController("of:NusbT(null)Csnps,dwc3"));
  EXPECT_TRUE(IsEnumeratingBusController("of:NusbT(null)Cbrcm,bcm2835-usbCsnps,dwc2"));
  EXPECT_TRUE(IsEnumeratingBusController("of:NmmcT(null)Cbrcm,bcm2835-sdhci"));
  EXPECT_TRUE(IsEnumeratingBusController("of:NmmcT(null)Crockchip,rk3399-dw-mshc"));
  EXPECT_FALSE(IsEnumeratingBusController("of:NsataT(null)Cgeneric-ahci"));
  EXPECT_FALSE(IsEnumeratingBusController("of:NethernetT(null)Csnps,dwmac"));
  EXPECT_FALSE(IsEnumeratingBusController("of:Ni2cT(null)Cbrcm,bcm2835-i2c"));
  // "usb" in the node name alone does not make a controller.
  EXPECT_FALSE(IsEnumeratingBusController("of:NusbT(null)Cvendor,phy"));
}

TEST(BusControllerTest, OtherAndMalformedModaliasesAreNot) {
  for (const char* modalias : {"", "pci:", "pci:v00008086", "of:", "of:Nusb",
                               "pci:v00008086d00007010sv00001AF4sd00001100bcZZsc01i80",
                               "pci:v00008086d00007010sv00001AF4sd00001100bc0",
                               "usb:v0627p0001d0000dc00dsc00dp00ic03isc01ip01in00",
                               "acpi:PNP0303:", "virtio:d00000001v00001AF4"}) {
    EXPECT_FALSE(IsEnumeratingBusController(modalias)) << modalias;
  }
}

}  // namespace
}  // namespace hotring::hotplug::modules
