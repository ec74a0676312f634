"""How a binary links Abseil's archives: the section-built ones of the cache, else Debian's."""

load("@hotring_absl_cache//:dirs.bzl", "ABSL_CACHE_LIB_DIRS")

def absl_linkopts(triplet, archives):
    """Link options for the Abseil `archives` (names without libabsl_ and .a) of `triplet`.

    The cache's archives are named by path: a board build names Debian's multiarch directory
    with -L for its other libraries, and an -l would find Debian's Abseil there first. The
    archives depend on each other in an order Debian does not record; a link group lets the
    linker resolve them in any order.
    """
    lib_dir = ABSL_CACHE_LIB_DIRS.get(triplet)
    if lib_dir:
        names = ["%s/libabsl_%s.a" % (lib_dir, a) for a in archives]
    else:
        names = ["-l:libabsl_%s.a" % a for a in archives]
    return ["-Wl,--start-group"] + names + ["-Wl,--end-group"]
