PYTHON ?= python3
export PYTHONDONTWRITEBYTECODE = 1

.PHONY: demo test setup fixtures bench demo-real

# Set up and run the main job on the embedded demo machine (no network needed).
demo: setup
	bash demo/run.sh

# The whole test suite (Debian's real packages are fetched once into /var/tmp).
test:
	bash tests/fixtures/fetch_debian.sh
	$(PYTHON) -m pytest -q -p no:cacheprovider

setup:
	bash scripts/setup-system.sh
	$(PYTHON) -m pip install -q --disable-pip-version-check -e '.[test]'

fixtures:
	bash tests/fixtures/fetch_debian.sh

# Speed against the reference tools, as ratios in one run (needs `make fixtures`).
bench:
	$(PYTHON) bench/bench_inspect.py
	$(PYTHON) bench/bench_detect.py
	$(PYTHON) bench/bench_verify.py
	$(PYTHON) bench/bench_apply.py
	$(PYTHON) bench/bench_extract.py
	$(PYTHON) bench/bench_install.py
