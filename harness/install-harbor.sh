#!/usr/bin/env bash
# Harbor (PyPI `harbor`, pinned) for the tests that run Cove in it, and what it needs that
# Debian bookworm lacks:
# - Python 3.13: Harbor wants 3.12 or later and bookworm has 3.11. Built from the source
#   Debian trixie ships (the upstream tarball, checked against the SHA-256 in Debian's .dsc)
#   into target/test-deps/python, once (about 3 minutes on 2 cores).
# - Docker Compose V2: Debian trixie's docker-compose package, unpacked into a private
#   Docker config folder (target/test-deps/docker-config) that the tests point DOCKER_CONFIG at.
# Then a venv, target/test-deps/harbor, with harbor and this checkout's integrations/harbor.
set -euo pipefail
cd "$(dirname "$0")/.."

deps=target/test-deps
mirror=https://deb.debian.org/debian
python_version=3.13.5
python_tarball=python3.13_${python_version}.orig.tar.xz
python_sha256=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640
compose_deb=docker-compose_2.26.1-4_amd64.deb
compose_sha256=47681197cb2b1ab88206b42a1a92fc75f50d9530a6322d03494a473eed0408ea
harbor_version=0.26.0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
mkdir -p "$deps"

if ! [ -x "$deps/python/bin/python3.13" ]; then
    echo "== Python $python_version from Debian trixie's source"
    $sudo apt-get install -y -qq --no-install-recommends build-essential libssl-dev libffi-dev \
        zlib1g-dev libsqlite3-dev libbz2-dev liblzma-dev libreadline-dev uuid-dev xz-utils curl >/dev/null
    prefix="$PWD/$deps/python"
    src=$(mktemp -d)
    curl -fsS -o "$src/$python_tarball" "$mirror/pool/main/p/python3.13/$python_tarball"
    echo "$python_sha256  $src/$python_tarball" | sha256sum -c --quiet
    tar -C "$src" -xf "$src/$python_tarball"
    (cd "$src/Python-$python_version" &&
        ./configure -q --prefix="$prefix" --without-ensurepip >/dev/null &&
        make -s -j"$(nproc)" >/dev/null 2>&1 && make -s altinstall >/dev/null 2>&1) ||
        { echo "building Python $python_version failed" >&2; exit 1; }
    rm -rf "$src"
fi

if ! [ -x "$deps/docker-config/cli-plugins/docker-compose" ]; then
    echo "== Docker Compose V2 from Debian trixie"
    tmp=$(mktemp -d)
    curl -fsS -o "$tmp/$compose_deb" "$mirror/pool/main/d/docker-compose/$compose_deb"
    echo "$compose_sha256  $tmp/$compose_deb" | sha256sum -c --quiet
    dpkg-deb -x "$tmp/$compose_deb" "$tmp/root"
    mkdir -p "$deps/docker-config/cli-plugins"
    cp "$tmp/root/usr/libexec/docker/cli-plugins/docker-compose" "$deps/docker-config/cli-plugins/"
    rm -rf "$tmp"
fi

if ! [ -x "$deps/harbor/bin/harbor" ]; then
    echo "== harbor $harbor_version"
    "$deps/python/bin/python3.13" -m venv "$deps/harbor"
fi
"$deps/harbor/bin/pip" install --quiet --disable-pip-version-check "harbor==$harbor_version"
"$deps/harbor/bin/pip" install --quiet --disable-pip-version-check -e integrations/harbor
"$deps/harbor/bin/harbor" --version >/dev/null
DOCKER_CONFIG="$deps/docker-config" docker compose version >/dev/null
