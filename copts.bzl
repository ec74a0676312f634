"""Compiler options for hotring's own code (third-party archives are built by Debian)."""

HOTRING_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
    # With --gc-sections below, unused functions of ours drop out of the static binary.
    "-ffunction-sections",
    "-fdata-sections",
]

# The shipped binary is one static executable. Sanitizer runtimes need dynamic linking, so the
# sanitizer configs (.bazelrc: --define=hotring_sanitizer=1) drop -static.
HOTRING_STATIC_LINKOPTS = select({
    "//:sanitizer": [],
    "//conditions:default": [
        "-static",
        "-Wl,--gc-sections",
    ],
})
