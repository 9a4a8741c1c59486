#!/usr/bin/env bash
# CI's fresh-machine stage: proves the README's two commands on a pristine Debian 12.
# Makes a minimal Debian root (debootstrap --variant=minbase bookworm, from the archive the host's apt
# uses, with bookworm-updates and bookworm-security as a fresh install has them), clones this
# repository's committed HEAD into it (/root/dragoman: a clean git clone, nothing else copied; changes
# not committed are not tested) and runs there, as root in a clean environment like a new user's
# shell (env -i HOME=/root PATH=... LANG=C.UTF-8):
#   scripts/test.sh                  installs the dependencies with apt-get (scripts/install-deps.sh),
#                                    builds the default configuration (CPU-only: no CUDA in the root)
#                                    and runs ctest
#   DEMO_MINUTES=1 scripts/demo.sh   builds the demo corpus, trains for 1 minute, averages,
#                                    translates and scores; checked: exit 0, score-bleu's BLEU and chrF
#                                    lines for the last, the averaged and the copied-source outputs
#   cmake --install build --prefix /opt/dragoman, then from /tmp the installed binary translates the
#                                    demo's test set with the averaged model and scores it: with no
#                                    options (the beam and alpha the demo wrote into the model), the
#                                    demo's own translations and BLEU, the same as with them given
# so that a package missing from scripts/install-deps.sh (or anything else the README takes for
# granted) fails CI. At the end it prints how long each part took.
#
# The root is a temporary directory (mktemp under $TMPDIR, default /tmp), removed at the end, also
# after a failure or Ctrl-C. Everything mounted for it (proc, sys, /dev bound, /dev/pts, /dev/shm as
# tmpfs, and debootstrap's own mounts) lives in a private mount and PID namespace (unshare), so the
# host never sees those mounts and every process started in the root dies with it; the mounts are
# unmounted before the directory is removed, which is refused while findmnt shows anything mounted
# under it. Nothing installed is kept: debootstrap's base tarball (the minbase .debs, about 40 MB) is
# cached, in ${XDG_CACHE_HOME:-$HOME/.cache}/dragoman-ci/, and renewed after FRESH_DEBIAN_CACHE_DAYS
# days; and the root's ccache uses the host's compile cache (FRESH_DEBIAN_CCACHE), so that the root
# need not compile again what CI's CPU-only build on the host has just compiled. A cache cannot hide
# a missing package: ccache finds an entry only after checking that every header the compilation read
# is still there with the same contents (otherwise it runs the compiler, which fails as it would
# without the cache), and it keys entries by the compiler's own binary (the root's, from its packages);
# linking, which needs the libraries themselves, is never cached, and the tests and the demo run.
#
# Needs root (re-runs itself with sudo when available; without root or sudo it says so and skips,
# exit 0) and the network (the Debian archive; installs debootstrap on the host with apt-get if it
# is missing). The log of everything run in the root is kept: its path is printed (the tail too, on
# failure).
#
# Takes about 4.5 minutes on a quiet 2-core AMD EPYC (2026-11-28, in CI after its CPU-only build):
# 11 s to install minbase from the cached tarball (the first run downloads it: 15 s more), 2:20 for
# scripts/test.sh (27 s of apt-get, 26 of building from the shared compile cache, 1:26 of ctest),
# 2 minutes for the demo (1:11 of training); with no cache to share the build takes about 4 minutes
# more. A busy machine takes longer (on a very busy one the demo's minute may be too short for its
# first checkpoint, and the demo fails).
#
#   FRESH_DEBIAN_SUITE=bookworm      the Debian release of the root
#   DEBIAN_MIRROR=...                the archive (default: the host apt's for that release, else
#                                    http://deb.debian.org/debian)
#   DEBIAN_SECURITY_MIRROR=...       the security archive (default: the host apt's, else
#                                    http://deb.debian.org/debian-security)
#   FRESH_DEBIAN_CACHE=1             0: no tarball cache, plain debootstrap every time
#   FRESH_DEBIAN_CACHE_DAYS=7        age after which the cached tarball is downloaded again
#   FRESH_DEBIAN_CCACHE=1            the compile cache the root's ccache uses: 1 = the host's own
#                                    (root's; a directory beside the tarball when run through sudo),
#                                    an absolute directory, or 0 = none (a cold build)
#   FRESH_DEBIAN_TIMEOUT=40          minutes allowed to the whole stage (what runs in the root is
#                                    stopped at that point, and the stage fails)
#   DEMO_MINUTES=1                   the demo's training budget in the root
#   JOBS                             passed to the scripts in the root when set (their default is 2)
#   TMPDIR=/tmp                      where the root is made
# shellcheck disable=SC2317  # functions called from traps and through step
set -euo pipefail

script=$(readlink -f "$0")
repo=$(cd "$(dirname "$script")/.." && pwd)
say() { echo "fresh-debian-check: $*"; }
die() { echo "fresh-debian-check: error: $*" >&2; exit 1; }
now() { printf '%(%s)T' -1; }
# mounted_under DIR: the mount points under DIR, deepest first (in this process's mount namespace);
# fails when findmnt cannot list them.
mounted_under() {
  local all
  all=$(findmnt -rn -o TARGET) || return 1
  awk -v d="$1/" 'index($0, d) == 1' <<<"$all" | sort -r
}

# ---------------------------------------------------------------------------------------------------
# Inside the private namespaces (pid 1 of a new PID namespace, a private mount namespace): make the
# root, mount, clone, run the README's commands. Called by the outer part below with the settings in
# the environment; writes everything to $FRESH_LOG and "### step NAME start|end TIME RC" markers.
if [[ ${1:-} == --inside ]]; then
  root=$FRESH_WORK/root
  log=$FRESH_LOG
  t0=$FRESH_T0
  suite=$FRESH_DEBIAN_SUITE
  mirror=$FRESH_MIRROR
  job=""
  mounted=()

  stamp() {
    local line t
    while IFS= read -r line || [[ -n $line ]]; do
      printf -v t '%(%s)T' -1
      printf '[%5ds] %s\n' "$((t - t0))" "$line"
    done
  }
  marker() { echo "### step $1 $2 $(now) ${3:-}" >>"$log"; }
  unstamp() { sed 's/^\[ *[0-9]*s\] //'; }

  unmount_all() {
    local i target
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
      umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}" ||
        echo "fresh-debian-check: could not unmount ${mounted[i]}" >&2
    done
    mounted=()
    # Anything else under the root (debootstrap's own proc/sys mounts, if it was interrupted).
    local left
    left=$(mounted_under "$root") || left="(findmnt failed)"
    if [[ -n $left ]]; then
      while read -r target; do umount -R -l "$target" 2>/dev/null || true; done <<<"$left"
      left=$(mounted_under "$root") || left="(findmnt failed)"
    fi
    if [[ -n $left ]]; then
      echo "fresh-debian-check: still mounted under $root: ${left//$'\n'/ }" >&2
      return 1
    fi
  }
  on_signal() {
    trap - INT TERM HUP
    echo "fresh-debian-check: interrupted, stopping the running step" >&2
    marker interrupted signal
    if [[ -n $job ]]; then
      kill -TERM -- "-$job" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do kill -0 -- "-$job" 2>/dev/null || break; sleep 0.1; done
      kill -KILL -- "-$job" 2>/dev/null || true
    fi
    exit 130
  }
  trap on_signal INT TERM HUP
  trap 'unmount_all || exit 1' EXIT

  # step NAME COMMAND...: runs COMMAND in the background (its own process group, stdin /dev/null),
  # its output time-stamped into the log; returns its exit status.
  step() {
    local name=$1 rc=0
    shift
    marker "$name" start
    set -m # the step in its own process group, killed as one
    ("$@" </dev/null 2>&1 | stamp >>"$log"; exit "${PIPESTATUS[0]}") &
    job=$!
    set +m
    wait "$job" || rc=$?
    job=""
    marker "$name" end "$rc"
    return "$rc"
  }
  do_mount() {
    local target=$1
    shift
    mount "$@" "$target"
    mounted+=("$target")
  }

  # 1. The minbase root: from the cached tarball of its .debs, or downloaded.
  debootstrap_args=(--variant=minbase --keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
  if [[ -n ${FRESH_TARBALL:-} ]]; then
    if [[ ! -s $FRESH_TARBALL ]]; then
      say "debootstrap --make-tarball: downloading the $suite minbase packages from $mirror"
      mkdir -p "$(dirname "$FRESH_TARBALL")"
      # (a partial tarball is left only by a run that was killed: removed after an hour)
      find "$(dirname "$FRESH_TARBALL")" -maxdepth 1 -name '*.partial.tgz' -mmin +60 -delete
      partial=$FRESH_TARBALL.$FRESH_T0-$RANDOM.partial.tgz
      step debootstrap-download debootstrap "${debootstrap_args[@]}" --make-tarball="$partial" \
        "$suite" "$FRESH_WORK/tarball" "$mirror" ||
        { rm -f "$partial"; die "debootstrap --make-tarball failed (log: $log)"; }
      mv -f "$partial" "$FRESH_TARBALL"
      rm -rf --one-file-system "$FRESH_WORK/tarball"
    fi
    say "debootstrap --unpack-tarball $FRESH_TARBALL"
    step debootstrap debootstrap "${debootstrap_args[@]}" --unpack-tarball="$FRESH_TARBALL" \
      "$suite" "$root" "$mirror" || die "debootstrap --unpack-tarball failed (log: $log)"
  else
    say "debootstrap --variant=minbase $suite $mirror"
    step debootstrap debootstrap "${debootstrap_args[@]}" "$suite" "$root" "$mirror" ||
      die "debootstrap failed (log: $log)"
  fi
  unmount_all # whatever debootstrap left mounted

  # 2. What a fresh install has besides: apt's updates and security sources, /etc/hosts, DNS.
  cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $FRESH_SECURITY_MIRROR $suite-security main
EOF
  printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    "$(hostname)" >"$root/etc/hosts"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  # The host's network trust, like its DNS: a host behind a TLS-intercepting proxy (its own CAs in
  # /usr/local/share/ca-certificates) gives the root its CA bundle for pip (the serve test installs
  # LibreTranslate's PyPI client), as its own /etc/pip.conf does. A machine on the open internet has
  # no such CAs and the root gets nothing: pip's own certificates reach PyPI.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null && [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
    cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/host-ca-bundle.crt" 2>/dev/null ||
      { mkdir -p "$root/etc/ssl" && cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/host-ca-bundle.crt"; }
    printf '[global]\ncert = /etc/ssl/host-ca-bundle.crt\n' >"$root/etc/pip.conf"
  fi

  # 3. The mounts the build, the tests (MPI over loopback, OpenMPI's shared memory) and apt need.
  do_mount "$root/proc" -t proc proc
  do_mount "$root/sys" -t sysfs sysfs
  do_mount "$root/dev" --bind /dev
  do_mount "$root/dev/pts" --bind /dev/pts
  do_mount "$root/dev/shm" -t tmpfs -o mode=1777,nosuid,nodev tmpfs
  # The host's compile cache, where the root's ccache looks for its own (/root/.cache/ccache).
  if [[ -n $FRESH_CCACHE ]]; then
    mkdir -p "$root/root/.cache/ccache"
    do_mount "$root/root/.cache/ccache" --bind "$FRESH_CCACHE"
  fi

  # 4. The clone: the committed HEAD, as a user would clone it.
  say "git clone $repo (HEAD $FRESH_REV) -> /root/dragoman"
  step clone git -c safe.directory="$repo" clone -q --no-hardlinks "$repo" "$root/root/dragoman" ||
    die "git clone failed (log: $log)"
  if [[ $(git -C "$root/root/dragoman" rev-parse HEAD) != "$FRESH_REV" ]]; then
    git -C "$root/root/dragoman" checkout -q --detach "$FRESH_REV"
  fi

  # 5. The README's two commands, each in a clean environment (no variable but these; every signal
  # handled by default, however CI started this script), within one time limit.
  in_root() {
    local env=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
    [[ -n ${JOBS:-} ]] && env+=("JOBS=$JOBS")
    timeout --kill-after=60 "$(((FRESH_DEADLINE - $(now)) > 0 ? FRESH_DEADLINE - $(now) : 1))" \
      chroot "$root" /usr/bin/env -i --default-signal "${env[@]}" bash -c "cd /root/dragoman && $1"
  }
  fail_tail() {
    echo "fresh-debian-check: $1 failed in the fresh root; the end of its log ($log):" >&2
    awk -v s="### step $2 start" 'index($0, s) == 1 { p = 1 } p' "$log" | tail -n 80 >&2
    # A demo that trained too few updates for a checkpoint in its budget: was the machine busy?
    echo "fresh-debian-check: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >&2
    exit 1
  }
  # crashes STEP: glibc's heap checks, aborts, segfaults and uncaught exceptions in STEP's output,
  # which a caller may not see (demo.sh's timeout returns 124 however train ends after its signal).
  crashes() {
    sed -n "/^### step $1 start/,\$p" "$log" | unstamp | grep -E \
      '^(corrupted |double free|free\(\): |malloc\(\): |malloc_consolidate|munmap_chunk|realloc\(\): |terminate called|.*line [0-9]+: +[0-9]+ (Segmentation fault|Aborted|Bus error))' || true
  }
  say "scripts/test.sh (install-deps, CPU-only build, ctest)"
  step test.sh in_root 'scripts/test.sh' || fail_tail scripts/test.sh test.sh
  say "DEMO_MINUTES=$DEMO_MINUTES scripts/demo.sh"
  step demo.sh in_root "DEMO_MINUTES=$DEMO_MINUTES scripts/demo.sh" || fail_tail scripts/demo.sh demo.sh

  # 6. The demo did train, average, translate and score: score-bleu's lines for the last, the
  # averaged and the copied-source outputs, and as many translations as test sentences.
  demo_out=$(sed -n '/^### step demo.sh start/,$p' "$log" | unstamp)
  bleu_lines=$(grep -cE '^ *BLEU\|nrefs:1\|.* = [0-9]+\.[0-9]+ ' <<<"$demo_out" || true)
  chrf_lines=$(grep -cE '^ *chrF2\|nrefs:1\|.* = [0-9]+\.[0-9]+' <<<"$demo_out" || true)
  run=$root/root/dragoman/runs/demo
  lines=$(wc -l <"$root/root/dragoman/data/demo/test.en")
  for name in last averaged; do
    [[ -f $run/test.$name.de && $(wc -l <"$run/test.$name.de") -eq $lines ]] ||
      fail_tail "scripts/demo.sh: runs/demo/test.$name.de missing or not $lines lines;" demo.sh
  done
  grep -q '== dragoman average-checkpoints' <<<"$demo_out" || fail_tail "scripts/demo.sh: no averaging;" demo.sh
  [[ -z $(crashes demo.sh) ]] || fail_tail "scripts/demo.sh: a crash ($(crashes demo.sh | head -n 1));" demo.sh
  if ((bleu_lines < 3 || chrf_lines < 3)); then
    fail_tail "scripts/demo.sh: $bleu_lines BLEU and $chrf_lines chrF lines of score-bleu, not 3 each;" demo.sh
  fi

  # 7. Installed: cmake --install into a prefix, then the tour's translate and score-bleu run from
  # another directory with the installed binary (nothing of the build tree on PATH). The averaged
  # model carries the beam and length penalty the demo chose on its dev set: translated with no
  # options it gives the demo's own test translations and BLEU, and given those settings as options
  # the same translations.
  recommended=$(sed -n "s/^.*averaged.safetensors now recommends \(--beam [0-9]* --length-penalty [0-9.]*\): .*/\1/p" \
    <<<"$demo_out")
  [[ -n $recommended ]] || fail_tail "scripts/demo.sh: no 'now recommends --beam B --length-penalty A' line;" demo.sh
  say "cmake --install build --prefix /opt/dragoman; the installed binary from /tmp (the model's $recommended)"
  step install in_root "cmake --install build --prefix /opt/dragoman && cd /tmp &&
    /opt/dragoman/bin/dragoman translate -m /root/dragoman/runs/demo/averaged.safetensors \
      -i /root/dragoman/data/demo/test.en -o /tmp/hyp.de &&
    /opt/dragoman/bin/dragoman translate -m /root/dragoman/runs/demo/averaged.safetensors \
      -i /root/dragoman/data/demo/test.en -o /tmp/hyp.options.de $recommended &&
    /opt/dragoman/bin/dragoman score-bleu --ref /root/dragoman/data/demo/test.de --input /tmp/hyp.de" ||
    fail_tail "cmake --install or the installed binary" install
  install_out=$(sed -n '/^### step install start/,$p' "$log" | unstamp)
  bleu_of() { grep -oE '^ *BLEU\|nrefs:1\|[^ ]* = [0-9]+\.[0-9]+' | head -n 1 | sed 's/.* = //'; }
  installed_bleu=$(bleu_of <<<"$install_out")
  [[ -n $installed_bleu ]] || fail_tail "the installed binary: no BLEU line;" install
  # The demo's BLEU of the averaged model: score-bleu's first line after its heading.
  demo_bleu=$(sed -n '/^the average of the last [0-9]* checkpoints/,$p' <<<"$demo_out" | bleu_of)
  cmp -s "$root/tmp/hyp.de" "$run/test.averaged.de" ||
    fail_tail "the averaged model with no options: not the demo's test translations;" install
  cmp -s "$root/tmp/hyp.de" "$root/tmp/hyp.options.de" ||
    fail_tail "the averaged model with no options: not its translations with $recommended;" install
  [[ $installed_bleu == "$demo_bleu" ]] ||
    fail_tail "the averaged model with no options: BLEU $installed_bleu, the demo's $demo_bleu;" install
  say "the averaged model with no options ($recommended from the model): BLEU $installed_bleu, the demo's"
  exit 0
fi

# ---------------------------------------------------------------------------------------------------
# Outside: root or sudo, debootstrap on the host, the temporary directory, the namespaces, the table.
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    pass=()
    for v in FRESH_DEBIAN_SUITE DEBIAN_MIRROR DEBIAN_SECURITY_MIRROR FRESH_DEBIAN_CACHE \
      FRESH_DEBIAN_CACHE_DAYS FRESH_DEBIAN_CCACHE FRESH_DEBIAN_TIMEOUT DEMO_MINUTES JOBS TMPDIR; do
      [[ -n ${!v:-} ]] && pass+=("$v=${!v}")
    done
    say "not root: running again with sudo"
    exec sudo env "${pass[@]}" bash "$script" "$@"
  fi
  say "SKIPPED: needs root (debootstrap, chroot, mount) and this user is not root and has no sudo"
  exit 0
fi

suite=${FRESH_DEBIAN_SUITE:-bookworm}
export DEMO_MINUTES=${DEMO_MINUTES:-1}
# The archives the host's apt uses for this release (apt-get indextargets), else Debian's CDN.
host_repo() {
  # shellcheck disable=SC2016  # apt's own $(FIELD) syntax
  apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
    awk -v r="$1" '$2 == r { sub(/\/$/, "", $1); print $1; exit }'
}
mirror=${DEBIAN_MIRROR:-$(host_repo "$suite")}
mirror=${mirror:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-$(host_repo "$suite-security")}
security=${security:-http://deb.debian.org/debian-security}

# The host's tools: debootstrap (installed here if missing, as on a clean CI machine), git, gpgv
# and the archive keyring (debootstrap checks the Release signature), unshare and findmnt.
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v git >/dev/null || need+=(git)
command -v gpgv >/dev/null || need+=(gpgv)
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || need+=(debian-archive-keyring)
if ((${#need[@]})); then
  say "installing ${need[*]} on the host"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
for tool in unshare findmnt chroot mount umount timeout; do
  command -v "$tool" >/dev/null || die "$tool not found (util-linux, mount, coreutils)"
done

rev=$(git -c safe.directory="$repo" -C "$repo" rev-parse HEAD)
if [[ -n $(git -c safe.directory="$repo" -C "$repo" --no-optional-locks status --porcelain --untracked-files=no) ]]; then
  say "note: $repo has changes that are not committed; the fresh root tests the committed HEAD ${rev:0:12}"
fi

# This script's own cache directory: the debootstrap tarball, and the compile cache under sudo.
cache_dir=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/dragoman-ci
tarball=""
if [[ ${FRESH_DEBIAN_CACHE:-1} != 0 ]]; then
  tarball=$cache_dir/debootstrap-$suite-minbase-$(dpkg --print-architecture)-$(printf '%s' "$mirror" | md5sum | cut -c1-8).tgz
  if [[ -f $tarball ]] && [[ -z $(find "$tarball" -mtime "-${FRESH_DEBIAN_CACHE_DAYS:-7}") ]]; then
    say "the cached tarball is older than ${FRESH_DEBIAN_CACHE_DAYS:-7} days: downloading again"
    rm -f "$tarball"
  fi
  if ! mkdir -p "$cache_dir" 2>/dev/null || [[ ! -w $cache_dir ]]; then
    say "cannot write $cache_dir: no tarball cache"
    tarball=""
  fi
fi

# The compile cache the root's builds share (see FRESH_DEBIAN_CCACHE above): this user's own
# ccache directory when this script was started as root (CI), so that the root's build finds what
# the host's CPU-only build just compiled; a directory of its own beside the tarball when it runs
# through sudo (the root's compiler writes as root, and another user's cache is not its to fill).
ccache_dir=""
case ${FRESH_DEBIAN_CCACHE:-1} in
  0) ;;
  1)
    if [[ -z ${SUDO_USER:-} ]] && command -v ccache >/dev/null; then
      ccache_dir=$(ccache -k cache_dir 2>/dev/null) || ccache_dir=""
    fi
    [[ -z $ccache_dir ]] && ccache_dir=$cache_dir/ccache
    ;;
  /*) ccache_dir=$FRESH_DEBIAN_CCACHE ;;
  *) die "FRESH_DEBIAN_CCACHE is '$FRESH_DEBIAN_CCACHE': 1, 0 or an absolute directory" ;;
esac
if [[ -n $ccache_dir ]] && ! mkdir -p "$ccache_dir" 2>/dev/null; then
  say "cannot make $ccache_dir: no shared compile cache"
  ccache_dir=""
fi
[[ -n $ccache_dir ]] && say "compile cache shared with the root: $ccache_dir"

t0=$(now)
work=$(mktemp -d --tmpdir dragoman-fresh-debian.XXXXXX)
log=$work.log
: >"$log"
ns_pid=""

# Removes the work directory, but only once nothing is mounted under it (the mounts are in the
# namespace that ended with the inner part; this checks that none reached the host).
remove_work() {
  local target left
  [[ -n $work && -d $work ]] || return 0
  left=$(mounted_under "$work") || left="(findmnt failed: cannot check)"
  if [[ -n $left ]]; then
    while read -r target; do umount -R "$target" 2>/dev/null || true; done <<<"$left"
    left=$(mounted_under "$work") || left="(findmnt failed: cannot check)"
  fi
  if [[ -n $left ]]; then
    echo "fresh-debian-check: NOT removing $work: still mounted under it: ${left//$'\n'/ }" >&2
    return 1
  fi
  rm -rf --one-file-system "$work"
}
# Stops the inner part (SIGTERM to the namespace's first process, which stops its step and unmounts;
# SIGKILL to unshare after 60 s, which kills the whole PID namespace), then removes the directory.
stop_inner() {
  local child i children
  [[ -n $ns_pid ]] && kill -0 "$ns_pid" 2>/dev/null || return 0
  children=()
  read -ra children <"/proc/$ns_pid/task/$ns_pid/children" 2>/dev/null || true # (no newline: read fails, the array is set)
  for child in "${children[@]}"; do kill -TERM "$child" 2>/dev/null || true; done
  for ((i = 0; i < 600; i++)); do kill -0 "$ns_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$ns_pid" 2>/dev/null || true
  wait "$ns_pid" 2>/dev/null || true
}
on_exit() {
  local rc=$?
  trap - EXIT
  trap '' INT TERM HUP # a second Ctrl-C does not cut the cleanup short
  stop_inner
  remove_work || rc=1
  [[ -d $work ]] || say "removed $work"
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

say "a fresh $suite root in $work/root (log: $log)"
export FRESH_WORK=$work FRESH_LOG=$log FRESH_T0=$t0 FRESH_DEBIAN_SUITE=$suite FRESH_MIRROR=$mirror \
  FRESH_SECURITY_MIRROR=$security FRESH_TARBALL=$tarball FRESH_REV=$rev FRESH_CCACHE=$ccache_dir \
  FRESH_DEADLINE=$(($(now) + ${FRESH_DEBIAN_TIMEOUT:-40} * 60))
set -m # the namespace in its own process group, with default signal dispositions
unshare --mount --propagation private --pid --fork --kill-child -- bash "$script" --inside </dev/null &
ns_pid=$!
set +m
status=0
wait "$ns_pid" || status=$?
ns_pid=""

# The table: each step's time from the log's markers; test.sh and demo.sh split at their outputs.
step_seconds() {
  awk -v s="$1" '$1 == "###" && $3 == s && $4 == "start" { a = $5 } $1 == "###" && $3 == s && $4 == "end" { b = $5 }
    END { if (a != "" && b != "") print b - a; else print "-" }' "$log"
}
# between STEP FROM TO: seconds from the first line of STEP's output matching FROM (or its start)
# to the first one after it matching TO (or its end); the patterns see the lines without time stamps.
between() {
  awk -v s="$1" -v t0="$t0" -v from="$2" -v to="$3" '
    $1 == "###" && $2 == "step" && $3 == s && $4 == "start" { on = 1; got = (from == ""); if (got) a = $5 - t0; next }
    $1 == "###" && $2 == "step" && $3 == s && $4 == "end" { if (on && got && b == "") b = $5 - t0; on = 0; next }
    !on { next }
    { secs = substr($0, 2, index($0, "s]") - 2) + 0; text = substr($0, index($0, "s] ") + 3) }
    !got && text ~ from { a = secs; got = 1; next }
    got && b == "" && to != "" && text ~ to { b = secs }
    END { if (got && b != "") print b - a; else print "-" }' "$log"
}
row() { printf '  %-52s %6s\n' "$1" "$2"; }
minutes() { awk -v s="$1" 'BEGIN { if (s == "-") print "-"; else printf "%d:%02d", s / 60, s % 60 }'; }
echo
say "times (minutes:seconds; log $log)"
if [[ -n $tarball ]]; then
  dl=$(step_seconds debootstrap-download)
  [[ $dl != - ]] && row "debootstrap --make-tarball (download the .debs)" "$(minutes "$dl")"
  row "debootstrap --unpack-tarball (install minbase)" "$(minutes "$(step_seconds debootstrap)")"
else
  row "debootstrap --variant=minbase" "$(minutes "$(step_seconds debootstrap)")"
fi
row "git clone" "$(minutes "$(step_seconds clone)")"
row "scripts/test.sh" "$(minutes "$(step_seconds test.sh)")"
row "  install-deps (apt-get)" "$(minutes "$(between test.sh "" '^-- ')")"
row "  cmake + build" "$(minutes "$(between test.sh '^-- ' '^Test project ')")"
row "  ctest" "$(minutes "$(between test.sh '^Test project ' '')")"
row "DEMO_MINUTES=$DEMO_MINUTES scripts/demo.sh" "$(minutes "$(step_seconds demo.sh)")"
row "  build check, demo corpus (prepare-demo-data)" "$(minutes "$(between demo.sh "" '== dragoman train')")"
row "  train" "$(minutes "$(between demo.sh '== dragoman train' '== the end of the loss curves')")"
row "  average, translate (2 x test set), score" "$(minutes "$(between demo.sh '== the end of the loss curves' '')")"
row "cmake --install, the installed binary (translate, score)" "$(minutes "$(step_seconds install)")"
row "total" "$(minutes "$(($(now) - t0))")"
echo
if ((status == 0)); then
  say "the demo's scores in the fresh root:"
  sed -n '/^### step demo.sh start/,/^### step demo.sh end/p' "$log" | sed 's/^\[ *[0-9]*s\] //' |
    grep -E '^(the last checkpoint|the average of|baseline,| *BLEU\||chrF2\|)' | sed 's/^/  /'
  say "PASSED: scripts/test.sh, DEMO_MINUTES=$DEMO_MINUTES scripts/demo.sh and the installed binary on a fresh" \
    "$suite minbase root"
else
  say "FAILED (exit $status; log: $log)"
fi
exit "$status"
