# Two commands do everything (see README.md):
#   make book   install everything, then build the HTML book into _build/html from the committed notebooks
#   make test   install everything, then run every check that CI runs
# and, while working, the unit tests without the slow ones (ResNet18, command line, browser), under 3 minutes:
#   make quick
# and one regenerates the book's executed notebooks:
#   make execute
# and one prints the whole book and the student edition to PDF (_build/pdf/ncbook.pdf, ncbook-student.pdf):
#   make pdf
# and one builds the student edition (no solutions) into _build/student:
#   make student
# and one prints the problem set's solutions for lecturers, outside the site (_build/solutions/solutions.pdf):
#   make solutions
# and one opens the chapters in JupyterLab (each .md opens as a notebook, paired with its .ipynb):
#   make lab
SHELL := /bin/bash
# the Python the venv is made from (3.11, 3.12 or 3.13: `make test PYTHON=python3.12`); another Python gets a venv of
# its own, .venv-<its name>, so that the default .venv is never replaced
PYTHON ?= python3
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(notdir $(PYTHON)))
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | sha1sum | cut -c1-12)

.PHONY: install chromium lab student solutions assets book pdf test builds unit quick mutation notebooks variants pairing build-strict clean-html lint verify execute clean

# JupyterLab settings of this environment: a chapter's .md opens as a notebook (jupytext), not in the text editor
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json

install: $(STAMP) $(LAB_OVERRIDES)
$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $@

$(LAB_OVERRIDES): scripts/jupyterlab_overrides.json $(STAMP)
	mkdir -p $(dir $@) && cp $< $@

# at the repository root, so that jupytext.toml pairs each chapter's .md with its .ipynb, showing the book's folder
lab: install
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/book

assets:
	bash scripts/fetch_assets.sh

# Debian's Chromium for the browser tests and the PDF, installed with apt-get where it is missing
chromium:
	@bash scripts/install_chromium.sh

# warning-free, as CI requires (-W -n); a second run rebuilds only what changed. With the book, the same command
# builds the student edition (its HTML and notebooks without the solutions, and the handout: _build/student); the
# book's site carries the students' archive, ncbook-student-source.zip, linked from the instructors' page
book: install assets
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	$(PY) scripts/student_edition.py
	@echo "Open _build/html/index.html in a browser; the student edition: _build/student/_build/html/index.html."

# the student edition alone
student: install assets
	$(PY) scripts/student_edition.py

# the problem set's solutions (course/solutions.md), for lecturers: never part of the site or its archives
solutions: install assets chromium
	$(PY) scripts/make_solutions.py

pdf: book chromium
	$(PY) scripts/make_pdf.py _build/html _build/pdf/ncbook.pdf
	$(PY) scripts/make_pdf.py _build/student/_build/html _build/pdf/ncbook-student.pdf _build/student/src/_toc.yml
	@echo "The book: _build/pdf/ncbook.pdf; the student edition: _build/pdf/ncbook-student.pdf"

# the documented commands themselves: book (from scratch), student and pdf, before the tests that read what they made
test: install assets chromium lint verify builds unit pairing notebooks variants
	@echo "all checks passed"

# book (from scratch), student and pdf, with the mutation check beside them: the builds and the printing use about
# one core of two, and the mutation check needs none of what they make
builds: install assets chromium
	@mkdir -p _build
	@$(PY) scripts/mutation_check.py > _build/mutation.log 2>&1 & m=$$!; \
	$(MAKE) --no-print-directory build-strict pdf solutions; b=$$?; wait $$m; r=$$?; \
	echo "mutation check, beside the builds:"; cat _build/mutation.log; exit $$(( b || r ))

# in `make test` the browser and print tests read the book, the PDFs and the handout that the commands above made
test: BUILT := $(CURDIR)/_build

verify:
	$(PY) -m ncbook verify

# in two processes (pytest-xdist), each taking whole test files, so that a file's fixtures and folders are its own,
# the longest files first (tests/conftest.py's LONGEST_FIRST) so that the two end together;
# one thread each (two processes of two OpenMP threads each on two cores spun against each other: on 2026-12-06 they
# ran 64% of the tests in 18 minutes; at one thread each, all of them took 16)
unit:
	NCBOOK_BUILT=$(BUILT) OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest tests -q --runslow -n 2 --dist loadfile --longest-first --no-loadscope-reorder

quick:
	$(PY) -m pytest tests -q

NBVAL := $(PY) -m pytest --nbval book -q --nbval-sanitize-with scripts/nbval_sanitize.cfg

# every chapter's outputs, twice at once: as configured, and with another BLAS setting (OPENBLAS_CORETYPE unset,
# one thread), so that a printed digit that depends on the kernel or the thread count fails. The run as configured
# waits passively (OMP_WAIT_POLICY: an idle thread sleeps instead of spinning; the arithmetic is the same): its two
# threads beside the other run's one on two cores spun against it (331 s against 177 s on 2026-12-06)
notebooks:
	@mkdir -p _build
	@OMP_WAIT_POLICY=PASSIVE TQDM_DISABLE=1 $(NBVAL) > _build/nbval.log 2>&1 & a=$$!; \
	env -u OPENBLAS_CORETYPE OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TQDM_DISABLE=1 $(NBVAL) > _build/nbval-1thread.log 2>&1 & b=$$!; \
	wait $$a; ra=$$?; wait $$b; rb=$$?; \
	echo "nbval, as configured:"; cat _build/nbval.log; \
	echo "nbval, OPENBLAS_CORETYPE unset, one thread:"; cat _build/nbval-1thread.log; \
	exit $$(( ra || rb ))

# every chapter's printed text under arithmetic variants that emulate other CPUs (MKL's instruction sets and its
# reproducible mode, ATen's scalar kernels, OpenBLAS's core types; scripts/check_variants.py says why these)
variants:
	$(PY) scripts/check_variants.py --jobs 2

mutation:
	$(PY) scripts/mutation_check.py

pairing:
	$(PY) scripts/check_pairing.py

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/python scripts/format_chapters.py --check

# `make book` from scratch: what an earlier build left is removed first
build-strict: clean-html book

clean-html:
	rm -rf _build/html _build/.doctrees _build/jupyter_execute _build/strict

execute: install
	$(PY) scripts/execute_chapters.py

clean:
	rm -rf _build
