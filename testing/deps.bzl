"""The repositories a workspace that uses @hotring needs, for its WORKSPACE file:

    local_repository(name = "hotring", path = "...")   # or any other way to get hotring
    load("@hotring//testing:deps.bzl", "hotring_dependencies")
    hotring_dependencies()

hotring builds offline from Debian's archive: Bazel 4 would fetch rules_cc, rules_java and
remote_coverage_tools from the network even for a plain C++ build, so these are hotring's small
local stand-ins (third_party/), copied by a repository rule that finds them inside @hotring
wherever it is. The system libraries (Abseil, liburing, GoogleTest) are @hotring//third_party
targets; the one repository they need is @hotring_absl_cache, which finds the section-built
Abseil archives of testing/absl/build_absl.sh when they are there (else Debian's are linked).
"""

load("//third_party:absl_cache.bzl", "absl_cache")

def _hotring_stub_impl(ctx):
    # Any file of the stub names its directory; every entry is linked into the new repository.
    source = ctx.path(ctx.attr.marker).dirname
    for entry in source.readdir():
        ctx.symlink(entry, entry.basename)

_hotring_stub = repository_rule(
    implementation = _hotring_stub_impl,
    attrs = {"marker": attr.label(allow_single_file = True)},
    local = True,
)

def hotring_dependencies():
    """Declares rules_cc, rules_java, remote_coverage_tools and hotring_absl_cache unless
    already declared."""
    for name in ["rules_cc", "rules_java", "remote_coverage_tools"]:
        if not native.existing_rule(name):
            _hotring_stub(
                name = name,
                marker = Label("//third_party/%s:WORKSPACE" % name),
            )
    if not native.existing_rule("hotring_absl_cache"):
        absl_cache(name = "hotring_absl_cache")
