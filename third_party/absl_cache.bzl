"""Finds the Abseil archives that testing/absl/build_absl.sh built with a section per function.

A repository rule, so that third_party/BUILD can ask where the cache is ($HOTRING_CACHE_DIR,
else $XDG_CACHE_HOME/hotring, else $HOME/.cache/hotring) and whether it holds the archives of
the installed libabsl-dev (the headers hotring compiles against are Debian's: archives of
another version would not match them). It is evaluated again whenever Bazel's server starts
(`local`), so archives built after a build are picked up by the next server (`bazel shutdown`).
"""

_ARCHES = {
    "x86_64-linux-gnu": "amd64",
    "aarch64-linux-gnu": "arm64",
    "arm-linux-gnueabihf": "armhf",
}

def _absl_cache_impl(rctx):
    env = rctx.os.environ
    base = env.get("HOTRING_CACHE_DIR")
    if not base:
        base = (env.get("XDG_CACHE_HOME") or env.get("HOME", "/nonexistent") + "/.cache") + "/hotring"
    dirs = {}
    for triplet, arch in _ARCHES.items():
        dest = "%s/absl/%s" % (base, triplet)
        stamp = rctx.path(dest + "/VERSION")
        if not stamp.exists or not rctx.path(dest + "/lib/libabsl_base.a").exists:
            continue
        installed = rctx.execute(["dpkg-query", "-W", "-f=${Version}", "libabsl-dev:" + arch])
        if installed.return_code != 0:
            continue
        if rctx.read(stamp).strip() == "abseil " + installed.stdout.strip():
            dirs[triplet] = dest + "/lib"
    rctx.file("BUILD", "")
    rctx.file("dirs.bzl", "\n".join([
        "# Written by third_party/absl_cache.bzl: the directory of the section-built Abseil",
        "# archives of each triplet for which the cache holds the installed version.",
        "ABSL_CACHE_LIB_DIRS = %r" % dirs,
        "",
    ]))

absl_cache = repository_rule(
    implementation = _absl_cache_impl,
    environ = ["HOTRING_CACHE_DIR", "XDG_CACHE_HOME", "HOME"],
    local = True,
)
