#!/usr/bin/env bash
# `ansible-test sanity` for this collection, offline once its environments are cached.
#
#   bash collections/ansible_collections/rocmrevive/gfx906/tests/sanity/run-sanity.sh [ansible-test options]
#   e.g. ... run-sanity.sh --test validate-modules --test pep8
#
# The project's tests/fixtures/ansible_qa_env.sh makes ansible-test's per-test virtual environments
# once (the only step that downloads; `make fixtures` runs it) under the test cache, keyed by
# ansible-test itself by what they hold; this script then runs ansible-test from the local
# environment (--local) with that cache as its HOME, so nothing is downloaded. The project's
# tests/test_ansible_lint.py runs it in `make test`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)           # the collection
REPO=$(cd "$HERE/../../../.." && pwd)
eval "$(bash "$REPO/tests/fixtures/ansible_qa_env.sh")"
PYVER=$("$ANSIBLE_VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# ansible-test wants the collection at .../ansible_collections/<namespace>/<name>, in version control
work=$(mktemp -d "${TMPDIR:-/tmp}/rocmrevive-sanity.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/rocmrevive/gfx906"
mkdir -p "$(dirname "$dest")"
cp -a "$HERE" "$dest"
find "$dest" -name __pycache__ -prune -exec rm -rf {} +
git -C "$dest" init -q && git -C "$dest" add -A && git -C "$dest" -c user.email=s@x -c user.name=sanity commit -qm sanity
cd "$dest"
HOME="$SANITY_HOME" PATH="$ANSIBLE_VENV/bin:$PATH" "$ANSIBLE_VENV/bin/ansible-test" sanity --local --python "$PYVER" "$@"
