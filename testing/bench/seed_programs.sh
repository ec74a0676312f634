# Sourced by the benchmark scripts: cuts the seed programs out of the seed text files into a
# directory and compiles them there. Nothing of the seeds is kept in the repository.
#
#   seed_programs_build SEEDS_DIR OUT_DIR
# leaves OUT_DIR/dgram (002: datagram select() test), OUT_DIR/pmsg (003: SysV ping-pong),
# OUT_DIR/server and OUT_DIR/client (004: SEQPACKET benchmark). Returns non-zero with a message
# on stderr when a seed file is missing or does not compile.

seed_programs_file() {  # SEEDS_DIR PREFIX
  local f
  f=$(ls "$1"/"$2"_*.txt 2>/dev/null | head -n1) || true
  if [[ -z "$f" ]]; then
    echo "no seed $2_*.txt in $1 (pass the seed directory with --seeds DIR)" >&2
    return 1
  fi
  echo "$f"
}

seed_programs_build() {  # SEEDS_DIR OUT_DIR
  local seeds=$1 out=$2 f src
  # 002: the datagram select() program, between the two rows of dashes.
  f=$(seed_programs_file "$seeds" 002) || return 1
  sed -n '/^---------------$/,/^---------------$/p' "$f" | sed '1d;$d' >"$out/dgram.c"
  # 003: pmsg.cpp, from its opening comment to the end of the file.
  f=$(seed_programs_file "$seeds" 003) || return 1
  awk '/^ \* pmsg\.cpp, parallel sysv msg pingpong/ { print prev; on = 1 } on { print } { prev = $0 }' \
    "$f" >"$out/pmsg.cpp"
  # 004: the attachments server.c and client.c.
  f=$(seed_programs_file "$seeds" 004) || return 1
  awk '/^\[-- Attachment #[0-9]+: server\.c --\]/ { on = 1; next }
       /^\[-- Attachment #/ { on = 0 }
       on && !/^\[-- Type:/' "$f" >"$out/server.c"
  awk '/^\[-- Attachment #[0-9]+: client\.c --\]/ { on = 1; next }
       /^\[-- Attachment #/ { on = 0 }
       on && !/^\[-- Type:/' "$f" >"$out/client.c"
  for src in dgram.c pmsg.cpp server.c client.c; do
    if [[ ! -s "$out/$src" ]]; then
      echo "could not cut $src out of the seed files in $seeds" >&2
      return 1
    fi
  done
  # The 2010 program relies on implicit declarations (strcmp, memset, wait): C89 rules accept
  # them on every compiler version.
  cc -O2 -w -std=gnu89 -o "$out/dgram" "$out/dgram.c" || return 1
  c++ -O2 -w -pthread -o "$out/pmsg" "$out/pmsg.cpp" || return 1
  # The seed's Makefile: CFLAGS := -O3 -Wall
  cc -O3 -Wall -o "$out/server" "$out/server.c" || return 1
  cc -O3 -Wall -o "$out/client" "$out/client.c" || return 1
}

# Finds or builds the benchmark binary: sets HOTRING unless already set. Builds //:hotring-bench,
# the benchmarks' binary (falling back to //ipc:ipc_bench; both take `bench <name> ...`
# arguments) with bazel in ROOT; BAZEL_OUTPUT_BASE chooses the output base.
hotring_binary() {  # ROOT
  [[ -n "${HOTRING:-}" ]] && return 0
  local root=$1 base_flag=() bin
  [[ -n "${BAZEL_OUTPUT_BASE:-}" ]] && base_flag=(--output_base="$BAZEL_OUTPUT_BASE")
  echo "building //:hotring-bench ..." >&2
  bin=$(cd "$root" && bazel "${base_flag[@]}" info --symlink_prefix=/ bazel-bin 2>/dev/null) || return 1
  if (cd "$root" && bazel "${base_flag[@]}" build --symlink_prefix=/ //:hotring-bench >&2); then
    HOTRING="$bin/hotring-bench"
  else
    echo "//:hotring-bench does not build; falling back to //ipc:ipc_bench" >&2
    (cd "$root" && bazel "${base_flag[@]}" build --symlink_prefix=/ //ipc:ipc_bench >&2) || return 1
    HOTRING="$bin/ipc/ipc_bench"
  fi
}
