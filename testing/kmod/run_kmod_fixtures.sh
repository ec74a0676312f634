#!/bin/sh
# kmod 30's own modprobe tests (testsuite/test-modprobe.c of Debian 12's kmod source package,
# fetched and cached by kmod_source.sh) run against Debian's modprobe and `hotring modprobe`.
# kmod's testsuite redirects paths with LD_PRELOAD and fakes init_module; here each fixture
# (rootfs-pristine/test-modprobe/NAME, with empty placeholder .ko files where kmod's
# populate-modules.sh puts its test modules) becomes a chroot holding both programs (lib.sh),
# so /proc/cmdline, /etc/modprobe.d, /lib/modules and /sys/module are the fixture's. uname -r
# cannot be faked without LD_PRELOAD, so every command gets `-S` with the fixture's version.
# For each test whose check is modprobe's output or exit status both programs run with the same
# arguments; stdout, the meaning of stderr (lib.sh: kmod_stderr_meaning) and the exit status
# must agree, and where kmod's test compares with a correct*.txt, Debian's output must equal it
# (else the chroot does not reproduce kmod's test). A test whose check is what init_module was
# given runs in its dry forms (--show-depends, and --dry-run --verbose): nothing is loaded here,
# ever (CAP_SYS_MODULE is dropped too). Extra rows run `-c` on every fixture with a module tree
# (the dumps of kmod-written indexes). Prints one table row per check and a closing line
#   kmod fixtures: N agree, N differ, N not checked
# or "kmod fixtures: skipped: REASON" with exit status 77 when Debian's modprobe, root or the
# source package is missing. Exit 0 when everything checked agrees.
#
#   run_kmod_fixtures.sh [--hotring BIN] [--keep DIR]
# BIN: a static hotring (default bazel-bin/hotring). --keep DIR keeps the roots and outputs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
kmod_setup "kmod fixtures" "$@"
if ! src=$(sh "$here/kmod_source.sh" 2>&1); then
  kmod_skip "kmod 30 source package not available: $(echo "$src" | tail -n 1)"
fi
src=$(echo "$src" | tail -n 1)
fixtures="$src/testsuite/rootfs-pristine/test-modprobe"
populate="$src/testsuite/populate-modules.sh"

# A fresh root for FIXTURE: the pristine tree, placeholder modules, both programs.
make_root() {
  root="$work/root.$1.$2"
  rm -rf "$root"
  cp -a "$fixtures/$1" "$root"
  # populate-modules.sh's map: ["test-modprobe/FIXTURE/DEST"]="MODULE.ko" (DEST/ is a dir).
  grep -o "\"test-modprobe/$1/[^]\"]*\"\]=\"[^\"]*\"" "$populate" | while IFS='=' read -r dest module; do
    dest=${dest#\"test-modprobe/$1/}
    dest=${dest%\"\]}
    module=$(echo "$module" | tr -d '"')
    case "$dest" in
      */) mkdir -p "$root/$dest"; : >"$root/$dest$module" ;;
      *) mkdir -p "$root/$(dirname "$dest")"; : >"$root/$dest" ;;
    esac
  done
  kmod_populate "$root" "$hotring"
}

agree=0 differ=0 unchecked=0 row=0
echo "| kmod test | fixture | command | Debian's modprobe | hotring modprobe | |"
echo "| --- | --- | --- | --- | --- | --- |"

# check TEST FIXTURE VERSION CORRECT LOADED ARGS...: one comparison row. CORRECT: kmod's
# expected stdout file (relative to the fixture; "-" none); LOADED: the modules kmod's test
# expects init_module to get ("-": not a loading test), checked against the insmod lines.
check() {
  test=$1 fixture=$2 version=$3 correct=$4 loaded=$5
  shift 5
  row=$((row + 1))
  make_root "$fixture" "$row"
  kmod_side_by_side "$root" "$work/$row" -S "$version" "$@"
  verdict=$kmod_verdict
  if [ "$correct" != - ] && ! cmp -s "$work/$row.debian.out" "$fixtures/$fixture/$correct"; then
    verdict="DIFFER (Debian's output is not kmod's $correct: the chroot does not reproduce the test)"
  fi
  if [ "$loaded" != - ]; then
    got=$(sed -n 's|^insmod \([^ ]*\).*|\1|p' "$work/$row.hotring.out" | sed 's|.*/||; s|\.ko.*||' |
          sort -u | tr '\n' ',' | sed 's/,$//')
    want=$(echo "$loaded" | tr ',' '\n' | sort -u | tr '\n' ',' | sed 's/,$//')
    [ "$got" = "$want" ] || verdict="DIFFER (insmod lines name $got, kmod's test loads $want)"
  fi
  if [ "$verdict" = agree ]; then agree=$((agree + 1)); else differ=$((differ + 1)); fi
  echo "| $test | $fixture | modprobe -S $version $* | $(kmod_describe_run "$work/$row.debian") | $(kmod_describe_run "$work/$row.hotring") | $verdict |"
  [ "$verdict" = agree ] || kmod_show_difference "$work/$row"
}

not_checked() {
  unchecked=$((unchecked + 1))
  echo "| $1 | $2 | modprobe $3 | - | - | not checked: $4 |"
}

# Every test of test-modprobe.c, with the command kmod runs and its check.
check modprobe_show_depends show-depends 4.4.4 correct.txt - --show-depends mod-loop-a
check modprobe_show_depends2 show-depends 4.4.4 correct-mod-simple.txt - --show-depends mod-simple
check modprobe_show_alias_to_none alias-to-none 4.4.4 correct.txt - \
  --show-depends --ignore-install --quiet mod-simple
not_checked modprobe_show_exports show-exports "--show-exports --quiet /mod-loop-a.ko" \
  "reads a built test module's __ksymtab (module-playground, built against kernel headers); hotring has no --show-exports"
# kmod's exact command: unix is builtin, so neither side calls init_module (and cannot).
check modprobe_builtin builtin 4.4.4 - - unix
check modprobe_builtin_lookup_only builtin 4.4.4 correct.txt - -R unix
# Loading tests: kmod checks what init_module got; here the resolution that decides it.
check modprobe_softdep_loop softdep-loop 4.4.4 - mod-loop-a,mod-loop-b --show-depends mod-loop-b
check modprobe_softdep_loop softdep-loop 4.4.4 - mod-loop-a,mod-loop-b --dry-run --verbose mod-loop-b
# kmod's test sees mod-loop-b loaded by the install command and mod-loop-a by insmod.
check modprobe_install_cmd_loop install-cmd-loop 4.4.4 - mod-loop-a --show-depends mod-loop-a
check modprobe_install_cmd_loop install-cmd-loop 4.4.4 - mod-loop-a --dry-run --verbose mod-loop-a
not_checked modprobe_install_cmd_loop install-cmd-loop "mod-loop-a" \
  "the loop ends only because the install command's own modprobe finds mod-loop-b loaded: needs real (or LD_PRELOAD-faked) loading"
check modprobe_param_kcmdline_show_deps module-param-kcmdline 4.4.4 correct.txt - --show-depends mod-simple
for n in 2 3 4 5 6 7 8; do
  check modprobe_param_kcmdline$n module-param-kcmdline$n 4.4.4 correct.txt - -c
done
check modprobe_force force 4.4.4 - mod-simple --force --show-depends mod-simple
check modprobe_force force 4.4.4 - mod-simple --force --dry-run --verbose mod-simple
check modprobe_oldkernel oldkernel 3.3.3 - mod-simple --show-depends mod-simple
check modprobe_oldkernel oldkernel 3.3.3 - mod-simple --dry-run --verbose mod-simple
check modprobe_oldkernel_force oldkernel-force 3.3.3 - mod-simple --force --show-depends mod-simple
check modprobe_oldkernel_force oldkernel-force 3.3.3 - mod-simple --force --dry-run --verbose mod-simple
check modprobe_external external 4.4.4 - mod-simple --show-depends mod-simple
check modprobe_external external 4.4.4 - mod-simple --dry-run --verbose mod-simple
# Extra: the configuration and the dumps of each fixture's kmod-written indexes.
for fixture in "$fixtures"/*/; do
  fixture=$(basename "$fixture")
  for version_dir in "$fixtures/$fixture"/lib/modules/*/; do
    [ -d "$version_dir" ] || continue
    version=$(basename "$version_dir")
    case "$version" in *.*.*) ;; *) continue ;; esac
    check "(-c)" "$fixture" "$version" - - -c
  done
done

# A test added to test-modprobe.c that the rows above do not cover is a failure until it is.
known=" modprobe_show_depends modprobe_show_depends2 modprobe_show_alias_to_none modprobe_show_exports modprobe_builtin modprobe_builtin_lookup_only modprobe_softdep_loop modprobe_install_cmd_loop modprobe_param_kcmdline_show_deps modprobe_param_kcmdline2 modprobe_param_kcmdline3 modprobe_param_kcmdline4 modprobe_param_kcmdline5 modprobe_param_kcmdline6 modprobe_param_kcmdline7 modprobe_param_kcmdline8 modprobe_force modprobe_oldkernel modprobe_oldkernel_force modprobe_external "
for test in $(sed -n 's/^DEFINE_TEST\(_WITH_FUNC\)\{0,1\}(\(modprobe_[a-z0-9_]*\).*/\2/p' "$src/testsuite/test-modprobe.c"); do
  case "$known" in
    *" $test "*) ;;
    *) differ=$((differ + 1)); echo "| $test | ? | ? | - | - | DIFFER: a test this script does not know |" ;;
  esac
done
echo "kmod fixtures: $agree agree, $differ differ, $unchecked not checked"
[ "$differ" -eq 0 ]
