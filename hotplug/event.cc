#include "hotplug/event.h"

#include "absl/strings/str_cat.h"

namespace hotring::hotplug {

std::string EventLabel(const Event& event) {
  if (event.seqnum.has_value()) {
    return absl::StrCat("SEQNUM=", *event.seqnum, " ACTION=", event.action,
                        " DEVPATH=", event.devpath);
  }
  return absl::StrCat("ACTION=", event.action, " DEVPATH=", event.devpath);
}

}  // namespace hotring::hotplug
