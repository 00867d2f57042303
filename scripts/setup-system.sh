#!/usr/bin/env bash
# System packages the tests and the demo need (Debian 12). Idempotent; quick when installed.
# apt waits for the dpkg lock (up to 10 minutes, e.g. while unattended upgrades run on a fresh
# machine) instead of failing at once.
set -euo pipefail
need=()
for pkg in clang-15 lld-15 clang-tools-15 llvm-15 binutils gcc g++ cmake make gpg gpgv xz-utils zstd dpkg-dev \
           e2fsprogs util-linux mount patch curl \
           pciutils debian-archive-keyring groff-base shellcheck zsh fish \
           pipx man-db strace python3-venv; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "setup-system: need root to install: ${need[*]}" >&2; exit 4; fi
  lock=(-o DPkg::Lock::Timeout=600)
  apt-get "${lock[@]}" update -q
  apt-get "${lock[@]}" install -y -q --no-install-recommends "${need[@]}"
fi
