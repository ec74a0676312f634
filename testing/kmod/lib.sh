# Sourced by the kmod comparison scripts (run_kmod_fixtures.sh, compare_showconfig.sh): a root
# tree in which Debian's modprobe (kmod 30: /bin/kmod with the libraries ldd names) and
# hotring (static) run side by side under chroot. Inside the chroot /proc/cmdline, /etc,
# /lib/modules and /sys are the tree's own files, so each side reads exactly the fixture.
# Both run with CAP_SYS_MODULE out of the bounding set: nothing either runs can load a module
# on this machine, whatever the command line says.

# Prints the path of Debian's kmod binary when /sbin/modprobe is kmod 30; fails otherwise.
kmod_binary() {
  for m in /usr/sbin/modprobe /sbin/modprobe; do
    [ -x "$m" ] || continue
    "$m" --version 2>/dev/null | grep -q '^kmod version 30$' || continue
    readlink -f "$m"
    return 0
  done
  return 1
}

# Why the comparison cannot run here (empty: it can).
kmod_unavailable_reason() {
  if ! kmod_binary >/dev/null; then echo "no kmod 30 /sbin/modprobe (apt-get install kmod)"; return; fi
  if [ "$(id -u)" != 0 ]; then echo "chroot needs root"; return; fi
  for tool in chroot setpriv ldd; do
    command -v "$tool" >/dev/null 2>&1 || { echo "no $tool"; return; }
  done
}

# kmod_populate ROOT HOTRING: puts /bin/kmod (as /bin/modprobe too) with its libraries, and
# /bin/hotring, into ROOT.
kmod_populate() {
  root=$1 hotring_bin=$2
  kmod=$(kmod_binary)
  mkdir -p "$root/bin"
  cp "$kmod" "$root/bin/kmod"
  ln -sf kmod "$root/bin/modprobe"
  cp "$hotring_bin" "$root/bin/hotring"
  # hotring is static, but a sanitizer build (the same bazel-bin path) is not.
  for lib in $( (ldd "$kmod"; ldd "$hotring_bin") 2>/dev/null | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

# kmod_run_side SIDE ROOT OUT ARGS...: runs `modprobe ARGS` in ROOT, SIDE "debian" (Debian's
# modprobe) or "hotring" (`hotring modprobe`); OUT.out, OUT.err, OUT.rc get its stdout, stderr
# and exit status.
kmod_run_side() {
  side=$1 root=$2 out=$3
  shift 3
  case "$side" in
    debian) set -- /bin/modprobe "$@" ;;
    hotring) set -- /bin/hotring modprobe "$@" ;;
  esac
  env -i PATH=/bin MODPROBE=/bin/modprobe "$(command -v setpriv)" --bounding-set -sys_module \
    "$(command -v chroot)" "$root" "$@" >"$out.out" 2>"$out.err"
  echo $? >"$out.rc"
}

# kmod_ran OUT: true when the program of run OUT started at all (chroot and exec worked).
kmod_ran() {
  rc=$(cat "$1.rc")
  [ "$rc" -lt 125 ]
}

# What a stderr says, without the wording: each line reduced to a key both sides share.
# kmod prefixes libkmod's messages with a source position ("libkmod: ERROR ../x.c:NN func:",
# "modprobe: ERROR: ../x.c:NN func()"); hotring says the same facts in its own words.
kmod_stderr_meaning() {
  sed -E \
    -e 's/^libkmod: ERROR [^ ]+ [A-Za-z_]+: /ERROR: /' \
    -e 's/^modprobe: (ERROR|WARNING|FATAL|INFO): [^ ]+:[0-9]+ [A-Za-z_]+\(\) /\1: /' \
    -e 's/^modprobe: //' \
    -e "s/^ERROR: Ignoring bad option on kernel command line while parsing module name: '(.*)'$/bad-cmdline-option \\1/" \
    -e "s/^ERROR: kernel command line: ignoring bad option for '(.*)'$/bad-cmdline-option \\1/" \
    -e "s/^ERROR: (.*) line ([0-9]+): ignoring bad line starting with '(.*)'$/bad-line \\1 \\2 \\3/" \
    -e 's/^ERROR: (.*): command (include|config) is deprecated and not parsed anymore$/deprecated \1 \2/' \
    -e 's/^ERROR: Directories inside directories are not supported: (.*)$/directory-in-directory \1/' \
    -e 's/^ERROR: magic check fail: .*$/corrupt-index/' \
    -e 's/^ERROR: major version check fail: .*$/corrupt-index/' \
    -e 's/^ERROR: .*: (not a kmod index|unsupported kmod index version).*; nothing is looked up in it$/corrupt-index/' \
    -e 's/^FATAL: Module (.*) not found in directory (.*)$/not-found \1 \2/' \
    -e 's/^WARNING: Module (.*) not found in directory (.*)$/not-found \1 \2/' \
    "$1"
}

# kmod_same_run A B: true when the runs A and B (kmod_run_side OUTs) printed the same stdout,
# stderrs that mean the same, and exited alike.
kmod_same_run() {
  cmp -s "$1.out" "$2.out" && cmp -s "$1.rc" "$2.rc" &&
    [ "$(kmod_stderr_meaning "$1.err")" = "$(kmod_stderr_meaning "$2.err")" ]
}

# kmod_describe_run OUT: one cell: exit status, stdout's line count, stderr's meaning.
kmod_describe_run() {
  lines=$(wc -l <"$1.out" | tr -d ' ')
  err=$(kmod_stderr_meaning "$1.err" | tr '\n' ';' | sed 's/;$//')
  printf 'exit %s, %s line%s' "$(cat "$1.rc")" "$lines" "$([ "$lines" = 1 ] || echo s)"
  [ -z "$err" ] || printf ', stderr: %s' "$err"
}

# kmod_side_by_side ROOT OUT ARGS...: `modprobe ARGS` in ROOT by both programs (OUT.debian,
# OUT.hotring); kmod_verdict becomes "agree" or "DIFFER (...)".
kmod_side_by_side() {
  sbs_root=$1 sbs_out=$2
  shift 2
  kmod_run_side debian "$sbs_root" "$sbs_out.debian" "$@"
  kmod_run_side hotring "$sbs_root" "$sbs_out.hotring" "$@"
  kmod_verdict=agree
  kmod_same_run "$sbs_out.debian" "$sbs_out.hotring" || kmod_verdict=DIFFER
  for sbs_side in debian hotring; do
    kmod_ran "$sbs_out.$sbs_side" ||
      kmod_verdict="DIFFER ($sbs_side's modprobe did not run in the chroot)"
  done
}

# kmod_show_difference OUT: both programs' stdout (as a diff) and stderr, indented.
kmod_show_difference() {
  diff "$1.debian.out" "$1.hotring.out" | head -n 40 | sed 's/^/    /'
  for side in debian hotring; do
    echo "  $side stderr:"
    sed 's/^/    /' "$1.$side.err"
  done
}

# kmod_setup SUITE "$@": the options both scripts take (--hotring BIN, --keep DIR, and those
# named in KMOD_EXTRA_FLAGS, each setting the variable of its name, dashes made underscores, to 1); a skip
# (exit 77, "SUITE: skipped: REASON") when the comparison cannot run here. Sets hotring and work.
kmod_setup() {
  suite=$1
  shift
  hotring="" keep=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --hotring) hotring=$2; shift 2 ;;
      --keep) keep=$2; shift 2 ;;
      -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *)
        case " ${KMOD_EXTRA_FLAGS:-} " in
          *" $1 "*) eval "$(echo "${1#--}" | tr - _)=1"; shift ;;
          *) echo "$(basename "$0"): unknown option $1" >&2; exit 2 ;;
        esac ;;
    esac
  done
  reason=$(kmod_unavailable_reason)
  [ -z "$reason" ] || kmod_skip "$reason"
  if [ -z "$hotring" ]; then
    hotring="$(cd "$(dirname "$0")/../.." && bazel info bazel-bin 2>/dev/null)/hotring"
  fi
  [ -x "$hotring" ] || kmod_skip "no hotring binary at $hotring (bazel build //:hotring)"
  work=${keep:-$(mktemp -d)}
  mkdir -p "$work"
  [ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
}

kmod_skip() {
  echo "$suite: skipped: $1"
  exit 77
}
