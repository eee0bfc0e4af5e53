#!/usr/bin/env bash
# The sandbox image, built with a real Docker engine for the tests that run it
# (harness/tests/e2e/real_docker.rs): what a fresh Debian machine needs for that.
#
# - a Docker engine: Debian's docker.io; when none answers, dockerd is started here with the
#   vfs storage driver, on its Unix socket and on 127.0.0.1:2376 with TLS (certificates made
#   with openssl into target/test-deps/docker-tls, client files named as DOCKER_CERT_PATH
#   wants them), so the tests reach one engine both ways;
# - a base image: registries cannot be reached here, so a Debian bookworm root made with
#   debootstrap is imported as cove-base:bookworm (once);
# - coved: this workspace's build, statically linked (crt-static: it runs in any image, and
#   in the tests' root that has no C library), copied into the build context
#   (COVED_FROM=context);
# - the image: sandbox-image/Dockerfile with BuildKit, tagged cove-sandbox:test. Its
#   install-runtime.sh layer is cached, so a rebuild after a change to coved is quick
#   (COVE_TEST_IMAGE_PRUNE=1, as CI sets it, drops that cache to spare the disk).
#
# Runs as root, or through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
image="${COVE_TEST_IMAGE:-cove-sandbox:test}"
base="cove-base:bookworm"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
tls="$PWD/target/test-deps/docker-tls"

step() { echo "== $*" >&2; }

if ! [ -x /usr/bin/dockerd ] || ! command -v debootstrap >/dev/null || ! command -v openssl >/dev/null; then
    step "installing docker.io, debootstrap and openssl"
    $sudo apt-get install -y -qq --no-install-recommends docker.io debootstrap openssl >/dev/null
fi
# Debian's client speaks to Debian's engine; another one earlier on PATH may lack BuildKit.
docker="/usr/bin/docker"
[ -x "$docker" ] || docker="docker"

if ! $sudo "$docker" info >/dev/null 2>&1; then
    step "starting dockerd (vfs) on its socket and on 127.0.0.1:2376 with TLS"
    mkdir -p "$tls"
    if ! [ -f "$tls/key.pem" ]; then
        (
            cd "$tls"
            openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=cove test CA" \
                -keyout ca-key.pem -out ca.pem 2>/dev/null
            openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
                -keyout server-key.pem -out server.csr 2>/dev/null
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
                -days 3650 -extfile server.ext -out server-cert.pem 2>/dev/null
            openssl req -newkey rsa:2048 -nodes -subj "/CN=cove" -keyout key.pem -out client.csr 2>/dev/null
            printf 'extendedKeyUsage=clientAuth\n' > client.ext
            openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial \
                -days 3650 -extfile client.ext -out cert.pem 2>/dev/null
            chmod 0644 ./*.pem
        )
    fi
    $sudo sh -c "nohup /usr/sbin/dockerd --storage-driver vfs \
        -H unix:///var/run/docker.sock -H tcp://127.0.0.1:2376 \
        --tlsverify --tlscacert '$tls/ca.pem' --tlscert '$tls/server-cert.pem' --tlskey '$tls/server-key.pem' \
        > /var/log/cove-test-dockerd.log 2>&1 &"
    for _ in $(seq 1 120); do
        $sudo "$docker" info >/dev/null 2>&1 && break
        sleep 0.5
    done
    $sudo "$docker" info >/dev/null 2>&1 || { tail -20 /var/log/cove-test-dockerd.log >&2; echo "dockerd did not start" >&2; exit 1; }
    # The socket is the tests' too, whoever runs them.
    $sudo chmod 0666 /var/run/docker.sock
fi

if ! $sudo "$docker" image inspect "$base" >/dev/null 2>&1; then
    step "debootstrap bookworm and import it as $base"
    root="$(mktemp -d /tmp/cove-base.XXXXXX)"
    # mktemp makes it 0700, and it becomes the image's /: a user other than root could not
    # reach anything (Docker's init bind-mounted at /sbin/docker-init included).
    chmod 0755 "$root"
    $sudo debootstrap --variant=minbase bookworm "$root" "$mirror" >/dev/null
    $sudo tar -C "$root" -c . | $sudo "$docker" import - "$base" >/dev/null
    $sudo rm -rf "$root"
fi

step "coved, statically linked, into the build context"
# --target keeps build scripts and proc macros dynamic; only coved is static.
RUSTFLAGS="-C target-feature=+crt-static" cargo build --quiet -p coved --target x86_64-unknown-linux-gnu
install -D -m 0755 target/x86_64-unknown-linux-gnu/debug/coved target/coved-image/coved
strip target/coved-image/coved

step "docker build $image"
# The image this build replaces would stay behind untagged, a full copy of its root with vfs.
previous="$($sudo "$docker" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"
DOCKER_BUILDKIT=1 $sudo "$docker" build --quiet -f sandbox-image/Dockerfile \
    --build-arg BASE_IMAGE="$base" --build-arg COVED_FROM=context -t "$image" . >/dev/null
if [ -n "$previous" ] && [ "$previous" != "$($sudo "$docker" image inspect --format '{{.Id}}' "$image")" ]; then
    $sudo "$docker" image rm "$previous" >/dev/null 2>&1 || true
fi
# With vfs every cached step is a full copy of the root (1.6 GB here); CI builds once.
if [ "${COVE_TEST_IMAGE_PRUNE:-0}" = 1 ]; then
    $sudo "$docker" builder prune --all --force >/dev/null
fi
echo "built $image" >&2
