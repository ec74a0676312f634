"""Compiler options for hotring's own code (third-party archives are built by Debian)."""

_WARNINGS_AND_SECTIONS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
    # With --gc-sections below, unused functions of ours drop out of the static binary.
    "-ffunction-sections",
    "-fdata-sections",
]

# Without exceptions (-fno-exceptions, the .bazelrc) nothing of ours unwinds: no C++ throw
# passes through it, no thread is cancelled, and nothing takes a backtrace. The unwind tables
# GCC writes for every function anyway (-fasynchronous-unwind-tables, x86-64's and arm64's
# default) are left out of the board's binary; the sanitizer builds keep them for their
# reports' stacks.
_NO_UNWIND_TABLES = select({
    "//:sanitizer": [],
    "//conditions:default": ["-fno-asynchronous-unwind-tables"],
})

# Code off the hot path is optimised for size (-Os after the .bazelrc's -O2 wins): what a
# board stores and pages in is mostly code that runs once per boot or per command. At -Os
# GCC 12 reports std::optional members as maybe uninitialized where they cannot be (after a
# has_value() check); the sanitizer builds keep -O2, and that warning with it (their resume
# must stay a tail call, see .bazelrc).
HOTRING_COPTS = _WARNINGS_AND_SECTIONS + _NO_UNWIND_TABLES + select({
    "//:sanitizer": [],
    "//conditions:default": [
        "-Os",
        "-Wno-maybe-uninitialized",
    ],
})

# The hot path keeps -O2 (the .bazelrc's): what every event, every start and every module
# lookup runs, where -Os cost 1.4-1.6x the CPU (bench events, bench modules). These are the
# reactor and its operations, netlink, the blocking pool, the task machinery, status and log;
# the event parsers and wire format, the reorderer, the scheduler, the handler chain, the
# timeline; the daemon (its flow and parts), launch and readiness; process spawning; the module
# index, modprobe.d and the resolver, and the modules link; the sysfs walk and trigger; the
# control client; the udev rules engine a udev image runs for every event (matching,
# substitution, the sysfs host, the event's database, nodes and links) and udev's per-event
# builtins, hwdb, database and monitor, which -Os made 1.5-1.65x slower
# (udev_rules_bench_recorded) for 160 KB. So is the benchmarks' own code (hotring-bench's, no board carries it): the
# load it makes, such as bench events' senders, stays what it was. Everything else (the
# stages' engines, udevadm, the tools) is -Os.
HOTRING_HOT_COPTS = _WARNINGS_AND_SECTIONS + _NO_UNWIND_TABLES

# The shipped binary is one static executable. Sanitizer runtimes need dynamic linking, so the
# sanitizer configs (.bazelrc: --define=hotring_sanitizer=1) drop -static.
# Identical functions are folded into one (gold's identical code folding: template
# instantiations over types of one size, coroutine frames' destroy paths): 131 KB. Only those
# whose address is not taken (`safe`); `all` would fold those too, for 12 KB more, and two
# distinct functions could then compare equal. gold is the host's linker already; the ARM
# toolchains' default is bfd, which cannot fold.
HOTRING_STATIC_LINKOPTS = select({
    "//:sanitizer": [],
    "//conditions:default": [
        "-static",
        "-Wl,--gc-sections",
        "-fuse-ld=gold",
        "-Wl,--icf=safe",
    ],
})
