"""A C++ toolchain for one of Debian's cross compilers (gcc-12, /usr/bin/<triplet>-*).

Bazel 4 selects C++ toolchains by --crosstool_top/--cpu (.bazelrc: --config=aarch64, armhf);
this rule describes the compiler: where its tools and system headers are, and the flags every
compile and link gets. Libraries come from Debian's multiarch directories
(/usr/lib/<triplet>, see //third_party:BUILD), headers from /usr/include, which Debian shares
between architectures.
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load(
    "@bazel_tools//tools/cpp:cc_toolchain_config_lib.bzl",
    "feature",
    "flag_group",
    "flag_set",
    "tool_path",
)

_COMPILE_ACTIONS = [
    ACTION_NAMES.assemble,
    ACTION_NAMES.preprocess_assemble,
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.cpp_header_parsing,
    ACTION_NAMES.cpp_module_compile,
    ACTION_NAMES.linkstamp_compile,
]

_LINK_ACTIONS = [
    ACTION_NAMES.cpp_link_executable,
    ACTION_NAMES.cpp_link_dynamic_library,
    ACTION_NAMES.cpp_link_nodeps_dynamic_library,
]

def _flags_feature(name, actions, flags):
    return feature(
        name = name,
        enabled = True,
        flag_sets = [flag_set(actions = actions, flag_groups = [flag_group(flags = flags)])] if flags else [],
    )

def _impl(ctx):
    triplet = ctx.attr.triplet
    tools = ["ar", "cpp", "gcc", "gcov", "ld", "nm", "objcopy", "objdump", "strip"]
    tool_paths = [tool_path(name = t, path = "/usr/bin/%s-%s" % (triplet, t)) for t in tools]

    features = [
        # Every binary for a board is fully static: a board's root may have no C library at
        # all (an initramfs), and the test binaries run in a guest that has only them.
        _flags_feature("default_link_flags", _LINK_ACTIONS, [
            "-static",
            "-Wl,-z,relro,-z,now",
            "-Wl,--build-id=md5",
            "-lstdc++",
            "-lm",
        ] + ctx.attr.link_flags),
        _flags_feature("default_compile_flags", _COMPILE_ACTIONS, [
            "-U_FORTIFY_SOURCE",
            "-D_FORTIFY_SOURCE=1",
            "-fstack-protector",
            "-fno-omit-frame-pointer",
            # Builds must not depend on the time or the path they were made at.
            "-Wno-builtin-macro-redefined",
            "-D__DATE__=\"redacted\"",
            "-D__TIMESTAMP__=\"redacted\"",
            "-D__TIME__=\"redacted\"",
            # GCC 12's maybe-uninitialized analysis follows its inlining, which differs per
            # target: on ARM it flags a std::string moved out of a StatusOr
            # (hotplug/fs_probe.cc) that is always set. The host build, same source, keeps the
            # warning as an error.
            "-Wno-maybe-uninitialized",
        ] + ctx.attr.compile_flags),
        feature(name = "opt"),
        feature(name = "dbg"),
        feature(name = "fastbuild"),
        feature(name = "supports_pic", enabled = True),
        feature(name = "supports_start_end_lib", enabled = False),
    ]

    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        features = features,
        cxx_builtin_include_directories = [
            "/usr/lib/gcc-cross/%s/12/include" % triplet,
            "/usr/lib/gcc-cross/%s/12/include-fixed" % triplet,
            "/usr/%s/include" % triplet,
            "/usr/include",
        ],
        toolchain_identifier = "debian-gcc-12-" + triplet,
        host_system_name = "x86_64-linux-gnu",
        target_system_name = triplet,
        target_cpu = ctx.attr.cpu,
        target_libc = "glibc",
        compiler = "gcc",
        abi_version = "gcc",
        abi_libc_version = "glibc",
        tool_paths = tool_paths,
    )

cross_cc_toolchain_config = rule(
    implementation = _impl,
    attrs = {
        "cpu": attr.string(mandatory = True),
        "triplet": attr.string(mandatory = True),
        "compile_flags": attr.string_list(),
        "link_flags": attr.string_list(),
    },
    provides = [CcToolchainConfigInfo],
)
