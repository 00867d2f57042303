PYTHON ?= python3
export PYTHONDONTWRITEBYTECODE = 1

.PHONY: demo test lint exit-codes man setup setup-torch fixtures fixtures-status bench ansible-sanity

# Set up and run the main job on the embedded demo machine (no network needed).
demo: setup
	bash demo/run.sh

# The whole test suite. Slow fixtures are made once and cached in $ROCMREVIVE_TEST_CACHE (default
# /var/tmp/rocmrevive-test-cache): Debian's real packages, compiled code objects, a CPU build of
# llama.cpp and the Ansible venv (about 10 minutes the first time). Each is reused only while its
# recorded inputs and content match (tests/fixtures/fixcache.py). Every skip reason is printed (-rs),
# and a skip whose reason is not on tests/skip_policy.py's list fails the run.
test: setup setup-torch fixtures lint
	$(PYTHON) -m pytest -q -rfEs -p no:cacheprovider

# ruff on the whole tree, mypy on the whole package (pyproject's [tool.mypy] files; both come with the
# `test` extra).
lint:
	$(PYTHON) -m ruff check rocmrevive tests bench scripts
	$(PYTHON) -m mypy

# Regenerate the README's and the Ansible collection's exit-code tables from rocmrevive/errors.py.
exit-codes:
	$(PYTHON) scripts/gen_exit_codes.py

# Regenerate the man page docs/rocmrevive.1 from the click help (tests/test_cli_docs.py checks it).
man:
	$(PYTHON) scripts/gen_man.py

fixtures:
	bash tests/fixtures/fetch_debian.sh
	bash tests/fixtures/fetch_debian.sh --set miopen
	bash tests/fixtures/fetch_hostlib_debs.sh >/dev/null
	$(PYTHON) tests/fixtures/codeobjects.py >/dev/null
	bash tests/fixtures/ansible_qa_env.sh >/dev/null
	sh tests/fixtures/build_llama.sh
	bash tests/fixtures/ansible_env.sh >/dev/null

# Which cached fixtures are usable, and why the others would be rebuilt.
fixtures-status:
	$(PYTHON) tests/fixtures/fixcache.py status

setup:
	bash scripts/setup-system.sh
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[test]'

# The tests' own PyTorch: the CPU build (this exact pin; a plain `torch` pulls a CUDA build).
setup-torch:
	$(PYTHON) -m pip install -q --disable-pip-version-check torch==2.13.0

# Speed against the reference tools, as ratios in one run (needs `make fixtures`).
bench:
	$(PYTHON) bench/bench_inspect.py
	$(PYTHON) bench/bench_detect.py
	$(PYTHON) bench/bench_verify.py
	$(PYTHON) bench/bench_apply.py
	$(PYTHON) bench/bench_extract.py
	$(PYTHON) bench/bench_install.py
	$(PYTHON) bench/bench_programs.py
	$(PYTHON) bench/bench_deadmirror.py

# ansible-test sanity on the collection (offline once `make fixtures` cached its environments;
# tests/test_ansible_lint.py runs it and ansible-lint in `make test`).
ansible-sanity:
	bash collections/ansible_collections/rocmrevive/gfx906/tests/sanity/run-sanity.sh
