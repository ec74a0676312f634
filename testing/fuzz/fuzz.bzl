"""hotring_fuzz_target: one libFuzzer entry point, fuzzed under --config=fuzz and replayed by tests.

A target is a .cc file defining
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
that returns 0 and aborts (testing/fuzz/fuzz_check.h: Require) when an input breaks a property.
Its seed corpus is the directory corpus/<name>/ beside the BUILD file that declares it: a few
dozen small files of real input, one input per file. Adding a parser's target is:

    load("//testing/fuzz:fuzz.bzl", "hotring_fuzz_target")
    hotring_fuzz_target(
        name = "mdev_conf_fuzz",
        srcs = ["mdev_conf_fuzz.cc"],
        deps = ["//hotplug/rules:parser"],
    )

plus the seeds in corpus/mdev_conf_fuzz/. testing/run_fuzz.sh finds every target by its tag.

The macro declares:
  <name>         the fuzzer (tags: manual, hotring_fuzz; never built by //...). Under
                 --config=fuzz (clang-16) it links libFuzzer; in any other build it links the
                 replay driver instead, so `bazel run //pkg:<name> -- FILE...` replays inputs
                 with gcc too.
  <name>_replay  a cc_test that runs every corpus file through the entry point: the seeds, and
                 with them every input that once crashed, stay checked in the normal and the
                 sanitizer test runs.
"""

load("//:copts.bzl", "HOTRING_COPTS")

def hotring_fuzz_target(name, srcs, deps = [], dict = None, **kwargs):
    corpus = "corpus/" + name
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = srcs,
        copts = HOTRING_COPTS,
        linkopts = select({
            "//testing/fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps + select({
            "//testing/fuzz:fuzzing": [],
            "//conditions:default": ["//testing/fuzz:replay_main"],
        }),
        data = [dict] if dict else [],
        tags = ["manual", "hotring_fuzz"],
        **kwargs
    )
    native.cc_test(
        name = name + "_replay",
        srcs = srcs,
        copts = HOTRING_COPTS,
        deps = deps + ["//testing/fuzz:replay_main"],
        data = native.glob([corpus + "/**"], allow_empty = True),
        args = ["%s/%s" % (native.package_name(), corpus)],
        **kwargs
    )
