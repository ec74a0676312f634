"""hotring_device_test: a board's recording replayed in `bazel test` against a golden manifest.

    load("@hotring//testing:defs.bzl", "hotring_device_test")

    hotring_device_test(
        name = "board_test",
        recording = "board.rec",        # `hotring record --out board.rec` on the board
        config = "mdev.conf",
        handlers = ["handler.sh"],      # --exec programs, run in this order for every event
        modules = ":modules",           # files under .../lib/modules/<recorded kernel>/
        firmware = ":firmware",         # files under .../lib/firmware/ (FIRMWARE requests)
        golden = "board.manifest",
    )

`bazel test :board_test` replays the recording through the hotring built from @hotring (no
other installation needed) and fails with a diff when the manifest differs from the golden
one; `bazel run :board_test.update` rewrites the golden file in the source tree.
See docs/device-tests.md.
"""

_HOTRING = Label("//:hotring")
_RUNNER = Label("//testing:device_test_runner.sh")

def hotring_device_test(
        name,
        recording,
        config,
        golden,
        handlers = [],
        modules = None,
        firmware = None,
        **kwargs):
    """A test replaying `recording` with `config`, compared with `golden`; and NAME.update.

    Args:
      name: the test's name; NAME.update is the runnable target rewriting `golden`.
      recording: label of a `hotring record` file.
      config: label of the mdev.conf to test.
      golden: label of the expected manifest (a source file of this workspace).
      handlers: labels of --exec programs, run one after the other for every event.
      modules: label of a filegroup of a modules tree (files under a `lib/modules/VERSION/`
        directory, VERSION being the recording's kernel); None: no modules are resolved.
      firmware: label of a filegroup of firmware files under a `lib/firmware/` directory (the
        board's /lib/firmware); None: every FIRMWARE request is listed as missing.
      **kwargs: passed to the test (tags, size, timeout, ...).
    """
    data = [_HOTRING, recording, config, golden] + handlers
    args = [
        "--hotring",
        "$(rootpath %s)" % _HOTRING,
        "--recording",
        "$(rootpath %s)" % recording,
        "--config",
        "$(rootpath %s)" % config,
        "--golden",
        "$(rootpath %s)" % golden,
    ]
    for handler in handlers:
        args += ["--exec", "$(rootpath %s)" % handler]
    if modules:
        data.append(modules)
        args += ["--modules", "$(rootpaths %s)" % modules]
    if firmware:
        data.append(firmware)
        args += ["--firmware", "$(rootpaths %s)" % firmware]
    native.sh_test(
        name = name,
        srcs = [_RUNNER],
        data = data,
        args = args,
        **kwargs
    )
    native.sh_binary(
        name = name + ".update",
        srcs = [_RUNNER],
        data = data,
        args = args + ["--update"],
        testonly = True,
        tags = ["manual"],
    )
