/* A libudev client for libudev_monitor_test (Debian's libudev):
 *   libudev_monitor_client SUBSYSTEM|tag:TAG N
 *     udev_monitor on the "udev" netlink group with a subsystem filter or a tag filter (both
 *     in-kernel BPF filters on hotring's header: the subsystem hash, the tag bloom filter).
 *     Prints "ready" once receiving, then for each device received: "device", its properties
 *     (KEY=VALUE lines), its tags ("tag=T"), "initialized=N", "end". Exits after N devices.
 *   libudev_monitor_client enumerate-tag TAG
 *     udev_enumerate_add_match_tag (it lists /run/udev/tags/TAG): for each device "device",
 *     "syspath=P", its properties and tags as above, "end". */
#include <libudev.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_device(struct udev_device* dev) {
  printf("device\nsyspath=%s\n", udev_device_get_syspath(dev));
  struct udev_list_entry* e;
  udev_list_entry_foreach(e, udev_device_get_properties_list_entry(dev)) {
    printf("%s=%s\n", udev_list_entry_get_name(e), udev_list_entry_get_value(e));
  }
  udev_list_entry_foreach(e, udev_device_get_tags_list_entry(dev)) {
    printf("tag=%s\n", udev_list_entry_get_name(e));
  }
  printf("initialized=%d\nend\n", udev_device_get_is_initialized(dev));
  fflush(stdout);
}

static int enumerate_tag(struct udev* udev, const char* tag) {
  struct udev_enumerate* en = udev_enumerate_new(udev);
  if (en == NULL) return 8;
  if (udev_enumerate_add_match_tag(en, tag) < 0) return 9;
  if (udev_enumerate_scan_devices(en) < 0) return 10;
  struct udev_list_entry* e;
  udev_list_entry_foreach(e, udev_enumerate_get_list_entry(en)) {
    struct udev_device* dev = udev_device_new_from_syspath(udev, udev_list_entry_get_name(e));
    if (dev == NULL) return 11;
    print_device(dev);
    udev_device_unref(dev);
  }
  udev_enumerate_unref(en);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  struct udev* udev = udev_new();
  if (udev == NULL) return 3;
  if (strcmp(argv[1], "enumerate-tag") == 0) {
    const int rc = enumerate_tag(udev, argv[2]);
    udev_unref(udev);
    return rc;
  }
  struct udev_monitor* mon = udev_monitor_new_from_netlink(udev, "udev");
  if (mon == NULL) return 4;
  if (strncmp(argv[1], "tag:", 4) == 0) {
    if (udev_monitor_filter_add_match_tag(mon, argv[1] + 4) < 0) return 5;
  } else if (udev_monitor_filter_add_match_subsystem_devtype(mon, argv[1], NULL) < 0) {
    return 5;
  }
  if (udev_monitor_enable_receiving(mon) < 0) return 6;
  printf("ready\n");
  fflush(stdout);
  int want = atoi(argv[2]);
  struct pollfd p = {.fd = udev_monitor_get_fd(mon), .events = POLLIN};
  while (want > 0) {
    if (poll(&p, 1, 20000) <= 0) return 7; /* nothing came: the test fails on the exit code */
    struct udev_device* dev = udev_monitor_receive_device(mon);
    if (dev == NULL) continue;
    print_device(dev);
    udev_device_unref(dev);
    --want;
  }
  udev_monitor_unref(mon);
  udev_unref(udev);
  return 0;
}
