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

# Code off the hot path is optimised for size (-Os after the .bazelrc's -O2 wins): what a
# board stores and pages in is mostly code that runs once per boot or per command. At -Os
# GCC 12 reports std::optional members as maybe uninitialized where they cannot be (after a
# has_value() check); the sanitizer builds keep -O2, and that warning with it (their resume
# must stay a tail call, see .bazelrc).
HOTRING_COPTS = _WARNINGS_AND_SECTIONS + select({
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
# control client. Everything else (the stages' engines, udevadm, the tools, the
# benchmarks) is -Os.
HOTRING_HOT_COPTS = _WARNINGS_AND_SECTIONS

# The shipped binary is one static executable. Sanitizer runtimes need dynamic linking, so the
# sanitizer configs (.bazelrc: --define=hotring_sanitizer=1) drop -static.
HOTRING_STATIC_LINKOPTS = select({
    "//:sanitizer": [],
    "//conditions:default": [
        "-static",
        "-Wl,--gc-sections",
    ],
})
