#!/usr/bin/env bash
# The recipe check: the image's runtime stage, run where no Docker engine is.
#
# Builds a throwaway Debian bookworm root with debootstrap, runs install-runtime.sh in it as
# the Dockerfile does, then checks that the tools are there, that `agent` owns /workspace,
# and that coved started through entrypoint.sh as `agent`, with the token from the
# environment, passes the HEALTHCHECK and runs a shell, Python, Node.js and Chromium.
# Also checks that every RUN of the Dockerfile's runtime stage is one of these scripts.
#
# Usage (as root, with debootstrap installed):  sandbox-image/check-recipe.sh path/to/coved
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
coved="${1:?usage: check-recipe.sh path/to/coved}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
port="${RECIPE_PORT:-17700}"
token="recipe-check-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d " \n")"

fail() { echo "recipe check FAILED: $*" >&2; exit 1; }
step() { echo "== $*"; }

[ "$(id -u)" -eq 0 ] || fail "run as root (debootstrap and chroot need it)"
command -v debootstrap >/dev/null || fail "install debootstrap (apt-get install debootstrap)"
[ -x "$coved" ] || fail "no coved binary at $coved"

step "the Dockerfile's runtime stage runs only these scripts"
runtime_runs="$(sed -n '/^FROM debian/,$p' "$here/Dockerfile" | grep -E '^RUN ' || true)"
[ "$runtime_runs" = "RUN /opt/cove/install-runtime.sh" ] \
    || fail "the runtime stage must RUN only /opt/cove/install-runtime.sh, found: $runtime_runs"
grep -q 'ENTRYPOINT \["/usr/bin/tini", "--", "/opt/cove/entrypoint.sh"\]' "$here/Dockerfile" \
    || fail "the entrypoint is not tini + entrypoint.sh"
grep -q 'CMD \["/opt/cove/healthcheck.sh"\]' "$here/Dockerfile" || fail "no HEALTHCHECK"

root="$(mktemp -d /tmp/cove-recipe.XXXXXX)"
# mktemp makes it 0700: as the root of the chroot, `agent` could not even reach /usr.
chmod 0755 "$root"
daemon=""
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
    for m in dev/shm dev/pts dev proc sys; do
        mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true
    done
    rm -rf "$root"
}
trap cleanup EXIT

step "debootstrap bookworm into $root"
debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"

step "install-runtime.sh, as the Dockerfile runs it"
install -d "$root/opt/cove"
cp "$here/install-runtime.sh" "$here/entrypoint.sh" "$here/healthcheck.sh" "$root/opt/cove/"
chroot "$root" /opt/cove/install-runtime.sh
install -m 0755 "$coved" "$root/usr/local/bin/coved"

step "the tools an agent expects"
for tool in chromium python3 pip3 node npm git curl wget jq csvlook xmlstarlet pdftotext zip unzip \
    tree rsync tmux vim ps rg tini bash; do
    chroot "$root" sh -c "command -v $tool >/dev/null" || fail "$tool is missing"
done
chroot "$root" fc-list | grep -qi 'liberation' || fail "no Liberation fonts"
[ "$(chroot "$root" stat -c %U /workspace)" = agent ] || fail "/workspace is not agent's"
[ "$(chroot "$root" id -u agent)" != 0 ] || fail "agent is root"

step "coved through entrypoint.sh as agent, token from the environment"
chroot "$root" /usr/sbin/runuser -u agent -- env -i HOME=/home/agent PATH=/usr/local/bin:/usr/bin:/bin \
    COVE_TOKEN="$token" COVED_LISTEN="127.0.0.1:$port" COVED_LOG=warn \
    /usr/bin/tini -s -- /opt/cove/entrypoint.sh >"$root/tmp/coved.out" 2>"$root/tmp/coved.err" &
daemon=$!
for _ in $(seq 1 100); do
    chroot "$root" env COVED_LISTEN="127.0.0.1:$port" /opt/cove/healthcheck.sh 2>/dev/null && break
    sleep 0.1
done
chroot "$root" env COVED_LISTEN="127.0.0.1:$port" /opt/cove/healthcheck.sh \
    || fail "the HEALTHCHECK does not pass: $(cat "$root/tmp/coved.err")"

api() { curl -fsS --max-time 60 -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
base="http://127.0.0.1:$port"
curl -s -o /dev/null -w '%{http_code}' "$base/v1/info" | grep -q 401 || fail "the API answers without the token"
api "$base/v1/info" | grep -q '"takeover"' || fail "/v1/info"
out="$(api -X POST "$base/v1/shell/exec" -d '{"command": "whoami && pwd && python3 -c \"print(6*7)\" && node -e \"console.log(6*7)\""}')"
echo "$out" | grep -q 'agent\\n/workspace\\n42\\n42' || fail "shell, Python or Node.js: $out"
out="$(api -X POST "$base/v1/shell/exec" -d '{"command": "pip install --dry-run --no-index six 2>&1 | head -1; echo pip-ok"}')"
echo "$out" | grep -q 'pip-ok' || fail "pip: $out"
page='data:text/html,<title>Recipe</title><button>Checked</button>'
out="$(api -X POST "$base/v1/browser/navigate_to?screenshot=false" -d "{\"url\": \"$page\"}")"
echo "$out" | grep -q '"title":"Recipe"' || fail "Chromium: $out $(tail -5 "$root/tmp/coved.err")"
echo "$out" | grep -q 'Checked' || fail "Chromium's elements: $out"

kill "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=""
echo "recipe check passed"
