#!/usr/bin/env bash
# `ansible-test sanity` for this collection, runnable without ansible-test's own downloads.
# Not part of CI: it builds one virtual environment per sanity test and pip-installs their pinned
# tools (a few minutes the first time; cached under ~/.ansible/test afterwards).
#
#   bash collections/ansible_collections/rocmrevive/gfx906/tests/sanity/run-sanity.sh [ansible-test options]
#   e.g. ... run-sanity.sh --test validate-modules --test pep8
#
# ansible-test bootstraps pip in each environment with a get-pip script it downloads from its own
# CI file host; this script seeds that cache with a small stand-in that uses the interpreter's
# ensurepip and then pip (from the package index pip is configured with).
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)           # the collection
REPO=$(cd "$HERE/../../../.." && pwd)
VENV=$(bash "$REPO/tests/fixtures/ansible_env.sh")
PYVER=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
# the pip version(s) ansible-test bootstraps (`pip='24.2'` in ansible-core 2.19's python_requirements.py)
versions=$("$VENV/bin/python" -c 'import pathlib, re, ansible_test
src = (pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py").read_text()
print(" ".join(sorted(set(re.findall(r"pip=.([0-9.]+).", src)))))')
for v in $versions; do
  shim="$cache/get_pip_${v//./_}.py"
  [ -f "$shim" ] && continue
  cat > "$shim" <<'PY'
"""Stand-in for get-pip.py (seeded by rocmrevive's run-sanity.sh): ensurepip, then pip install."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))
PY
done

# ansible-test wants the collection at .../ansible_collections/<namespace>/<name>, in version control
work=$(mktemp -d /tmp/rocmrevive-sanity.XXXXXX)
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/rocmrevive/gfx906"
mkdir -p "$(dirname "$dest")"
cp -a "$HERE" "$dest"
find "$dest" -name __pycache__ -prune -exec rm -rf {} +
git -C "$dest" init -q && git -C "$dest" add -A && git -C "$dest" -c user.email=s@x -c user.name=sanity commit -qm sanity
cd "$dest"
"$VENV/bin/ansible-test" sanity --python "$PYVER" --requirements "$@"
