// `hotring bench events`: the event pipeline measured through the real daemon and socket, next
// to a plain serial baseline (receive a datagram, posix_spawn + wait /bin/true, repeat).
#ifndef HOTRING_HOTPLUG_BENCH_BENCH_EVENTS_H_
#define HOTRING_HOTPLUG_BENCH_BENCH_EVENTS_H_

#include <string>
#include <vector>

namespace hotring::hotplug {

// Parses the bench's arguments, runs it, prints the report; returns the exit code.
int BenchEventsCommand(const std::vector<std::string>& args);

}  // namespace hotring::hotplug

#endif  // HOTRING_HOTPLUG_BENCH_BENCH_EVENTS_H_
