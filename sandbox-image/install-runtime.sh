#!/usr/bin/env bash
# Installs everything the Cove sandbox image runs besides coved itself: Chromium and fonts,
# Python 3 with pip, Node.js with npm, the command-line tools an agent expects, tini, and
# the non-root `agent` user owning /workspace.
#
# Runs as root on Debian bookworm, in the image's build (Dockerfile).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

AGENT_UID="${AGENT_UID:-1000}"

packages=(
    # coved's own needs: the shell and process tools, TLS roots, an init that reaps
    bash ca-certificates procps tini
    # the browser and the fonts pages expect (Latin, symbols, emoji, CJK)
    chromium fonts-liberation fonts-dejavu-core fonts-noto-color-emoji fonts-wqy-zenhei
    # languages
    python3 python3-pip python3-venv nodejs npm
    # tools
    git curl wget jq csvkit xmlstarlet poppler-utils zip unzip tree rsync tmux vim-tiny
    ripgrep less file locales
)

apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

# A UTF-8 locale, so Python, tmux and the agent's tools agree on text.
sed -i 's/^# *\(en_US.UTF-8 UTF-8\)/\1/' /etc/locale.gen
locale-gen >/dev/null

# `vim` for the agent and people who take over a shell.
if [ ! -e /usr/local/bin/vim ]; then
    ln -s /usr/bin/vim.tiny /usr/local/bin/vim
fi

# Debian marks its Python as externally managed (PEP 668); an agent's `pip install` goes to
# its user site instead of failing.
cat > /etc/pip.conf <<'CONF'
[global]
break-system-packages = true
user = true
CONF

if ! id agent >/dev/null 2>&1; then
    useradd --create-home --uid "$AGENT_UID" --user-group --shell /bin/bash agent
fi
install -d -o agent -g agent -m 0755 /workspace
install -d -o agent -g agent -m 0700 /home/agent/.local /home/agent/.local/state /home/agent/.local/state/coved

apt-get clean
rm -rf /var/lib/apt/lists/*
