/* A libudev client for udev_control_test (Debian's libudev): prints what udev_queue says,
 *   "active=A empty=E"
 * udev_queue_get_udev_is_active() (is /run/udev/control there) and
 * udev_queue_get_queue_is_empty() (is /run/udev/queue absent). */
#include <libudev.h>
#include <stdio.h>

int main(void) {
  struct udev* udev = udev_new();
  if (udev == NULL) return 3;
  struct udev_queue* queue = udev_queue_new(udev);
  if (queue == NULL) return 4;
  printf("active=%d empty=%d\n", udev_queue_get_udev_is_active(queue),
         udev_queue_get_queue_is_empty(queue));
  udev_queue_unref(queue);
  udev_unref(udev);
  return 0;
}
