# Two commands do all set-up on a fresh machine (see README.md):
#   make book   build the executed HTML book into _build/html
#   make test   format check, lint and type check, then the whole test suite (lib unit tests + every chapter under nbval)
#   make seeds  every chapter under nbval on alternate seeds (CIRCUITS_SEED=1, 2, 3; SEEDS="4 5" for others)
# Both create .venv when missing and reinstall only when requirements.txt or pyproject.toml changed.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Quiet progress bars in tests and in the rendered book (they would show as dead widgets there).
export CIRCUITS_PROGRESS := 0
# Under `make test` and `make book` (and so in CI) a failing exercise check raises instead of falling back to the
# book's version (lib.exercises.framework.passing_or_reference): a broken solution fails the build. Never under
# `make lab`, the learner's path, where an unsolved exercise must not stop "Run all".
test book colab seeds: export CIRCUITS_STRICT_CHECKS := 1
# Every figure a chapter shows is checked for overlapping text as it is drawn (lib/show/text_overlap.py); a failed
# check prints a line under the figure, and the built-book tests fail on a page that shows it.
test book seeds: export CIRCUITS_FIGURE_CHECK := 1
# One torch thread per process. The book's models are tiny; `make test` runs two notebooks at once on two
# cores, and on a busy CPU two threads per process made steps 5-50x slower (threads waiting on each other).
# On an idle CPU two threads would be about 30% faster for chapter 5; robustness wins. Override: OMP_NUM_THREADS=2.
export OMP_NUM_THREADS ?= 1
# pytest-xdist workers for `make test` (whole notebooks per worker: --dist loadfile).
JOBS   ?= 2

# Where `make test` keeps the chapters it executed, for `make book` to reuse.
EXECUTED := _build/executed

# `make wheelhouse`: every wheel a learner needs on this platform (lib, its runtime dependencies, JupyterLab).
WHEELHOUSE ?= _build/wheelhouse

.PHONY: setup book test seeds colab lab wheelhouse serve learner learner-run gpu-check-cpu bench clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -r requirements.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -e .
	@touch $(STAMP)

# The book reuses what `make test` executed, where nothing it depends on changed since (scripts/shared_execution.py),
# and executes the other chapters itself: one execution of every chapter per CI run. Then the Korean edition
# (scripts/build_translation.py) into _build/html/ko from the same executions and translations/ko.
book: $(STAMP)
	$(PY) scripts/shared_execution.py $(EXECUTED) _build/.jupyter_cache
	$(VENV)/bin/jupyter-book build --all -W -n --keep-going .
	$(PY) scripts/build_translation.py ko
	$(PY) -m pytest -q -m built_book tests
	@echo "Book built: file://$(CURDIR)/_build/html/index.html"

test: $(STAMP)
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/mypy
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(PY) -m pytest -n $(JOBS) --dist loadfile --nbval-lax --nbval-current-env -m "not built_book and not colab and not learner_run and not gpu_check" \
		-p scripts.shared_execution --keep-executed $(EXECUTED) tests chapters

# The seed sweep (lib/core/seeds.py): every chapter under nbval, as `make test` runs them, once per alternate seed
# (CIRCUITS_SEED=k moves every seed a chapter chooses; shipped runs stay as shipped). A claim must hold on seeds it
# was not tuned on. Every seed runs, then the target fails if any did. .ci/run runs it after `make book`.
SEEDS ?= 1 2 3

seeds: $(STAMP)
	@failed=""; for k in $(SEEDS); do \
		echo "== CIRCUITS_SEED=$$k"; \
		CIRCUITS_SEED=$$k $(PY) -m pytest -n $(JOBS) --dist loadfile --nbval-lax --nbval-current-env chapters \
			|| failed="$$failed $$k"; \
	done; \
	if [ -n "$$failed" ]; then echo "make seeds: chapters failed on CIRCUITS_SEED=$$failed"; exit 1; fi

# The learner edition run as learners run it (tests/book/test_learner_run.py): every learner/ notebook top to bottom,
# stubs untouched and with a wrong answer in every stub, without strict checks; it must finish both ways.
learner-run: $(STAMP)
	env -u CIRCUITS_STRICT_CHECKS $(PY) -m pytest -q -n $(JOBS) -m learner_run tests/book/test_learner_run.py

# The Colab path simulated (tests/book/test_colab.py): a Colab-like environment, the setup cell's install from a clean
# commit of this tree, chapters 0 and 1 run there; and the wheelhouse installed offline. Needs the package index
# (as Colab does), so it is not part of `make test`, which works offline; .ci/run runs it.
colab: $(STAMP)
	$(PY) -m pytest -q -p no:xdist -m colab tests

# bench/gpu_check.sh as the GPU machine runs it (no network, its own Python, carried wheels), on this CPU
# (tests/book/test_gpu_check.py). Building the simulated machine needs the package index, so .ci/run runs it, not `make test`.
gpu-check-cpu: $(STAMP)
	$(PY) -m pytest -q -p no:xdist -m gpu_check tests/book/test_gpu_check.py

# The lean learner's path: only the runtime dependencies (pyproject.toml) and JupyterLab, then the learner edition
# (learner/) opens.
# (On Linux without a GPU, PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu gets the small CPU torch.)
lab:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check -q -e . jupyterlab
	$(VENV)/bin/jupyter lab learner/00_start_here.ipynb

# An offline room kit: wheels for lib, its runtime dependencies and JupyterLab, for this platform and Python.
# Install without network: pip install --no-index --find-links _build/wheelhouse circuits-from-scratch jupyterlab
# (setuptools builds lib's wheel in build/: removed before, so no stale module gets in, and after.)
wheelhouse: $(STAMP)
	rm -rf build
	$(PY) -m pip wheel --disable-pip-version-check -q -w $(WHEELHOUSE) torch==2.13.0 . jupyterlab
	rm -rf build
	@du -sh $(WHEELHOUSE)

# The learner edition (learner/, committed: Colab opens it from GitHub; a test fails when it is out of date).
learner: $(STAMP)
	$(PY) scripts/make_learner.py learner

bench: $(STAMP)
	$(PY) bench/run_all.py

serve: $(STAMP)
	@test -f _build/html/index.html || $(MAKE) book
	$(PY) -m http.server --directory _build/html --bind 127.0.0.1 8000

clean:
	rm -rf _build .pytest_cache .mypy_cache .ruff_cache
