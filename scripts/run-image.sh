#!/usr/bin/env bash
# Runs a command of a locally stored image without an OCI runtime, for machines whose sandbox
# refuses one (crun cannot set rlimits there): the image's root filesystem (podman image mount,
# read-only) under a throw-away writable overlay, /proc and /dev from the host, then
# `chroot --userspec` as the image's user with its environment, working directory and entrypoint.
# The host's network is shared, so a server inside listens on this machine's loopback.
#
# usage: scripts/run-image.sh [--entrypoint PROGRAM] [--env NAME=VALUE]... IMAGE [ARGS...]
#   ARGS replace the image's CMD; --entrypoint replaces its ENTRYPOINT; --env adds to or
#   overrides the image's ENV. Needs root and podman. SIGTERM/SIGINT stop the command, then
#   everything mounted is undone.
set -euo pipefail

entrypoint=""
extra_env=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --entrypoint) entrypoint=${2:?--entrypoint needs a program}; shift 2 ;;
    --env) extra_env+=("${2:?--env needs NAME=VALUE}"); shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "run-image.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
image=${1:?usage: run-image.sh [--entrypoint PROGRAM] [--env NAME=VALUE]... IMAGE [ARGS...]}
shift

# The image's configuration as shell words: user, working directory, then entrypoint and cmd.
config=$(podman image inspect --format '{{json .Config}}' "$image")
read_config() { node -e 'const c = JSON.parse(process.argv[1]); process.stdout.write(eval(process.argv[2]))' "$config" "$1"; }
user=$(read_config 'c.User ?? ""')
workdir=$(read_config 'c.WorkingDir || "/"')
if [[ ! $user =~ ^[0-9]+(:[0-9]+)?$ ]]; then
  echo "run-image.sh: the image's user '$user' is not numeric uid[:gid]; chroot --userspec needs one" >&2
  exit 1
fi
[[ $user == *:* ]] || user="$user:$user"
mapfile -d '' image_env < <(read_config '(c.Env ?? []).map((e) => e + "\0").join("")')
if [[ -n $entrypoint ]]; then
  command=("$entrypoint")
else
  mapfile -d '' command < <(read_config '(c.Entrypoint ?? []).map((e) => e + "\0").join("")')
fi
if [[ $# -gt 0 ]]; then
  command+=("$@")
elif [[ -z $entrypoint ]]; then
  mapfile -d '' cmd < <(read_config '(c.Cmd ?? []).map((e) => e + "\0").join("")')
  command+=("${cmd[@]}")
fi

scratch=$(mktemp -d /tmp/berth-run-image.XXXXXX)
root="$scratch/root"
mounted=()
child=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  # Innermost first; lazy, so a process still leaving cannot keep the overlay up.
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  podman image unmount "$image" >/dev/null 2>&1 || true
  rm -rf "$scratch"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

lower=$(podman image mount "$image")
mkdir -p "$root" "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$scratch/upper,workdir=$scratch/work" "$root"
mounted+=("$root")
mkdir -p "$root/proc" "$root/dev" "$root/tmp"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --rbind /dev "$root/dev" && mounted+=("$root/dev")
chmod 1777 "$root/tmp"

# env -i: only the image's environment (and --env), as a container runtime would start it.
chroot --userspec="$user" "$root" /usr/bin/env -i -C "$workdir" "${image_env[@]}" "${extra_env[@]}" "${command[@]}" &
child=$!
set +e
wait "$child"
status=$?
set -e
child=""
exit "$status"
