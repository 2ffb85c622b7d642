# One entry point. Everything sets itself up: a fresh machine needs only Python 3.11+ and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STACK  ?= prod-aws

.PHONY: need-pulumi plan cost explain component-schema plugins lock setup synth synth-all check test browser-test cluster-test sched-test engine-test lint fmt docs docs-check bench schema refresh-upstream policy-venv policy-data clean urn-snapshots plan-snapshots mutate mutate-sample

# Everything installed comes from a hashed lock (`make lock` refreshes them from the ranges in pyproject.toml and
# policies/requirements.in): requirements/dev.txt for the tests and tools, requirements.txt for the program (what
# `pulumi install` reads), policies/requirements.txt for the pack. pip refuses any file whose hash differs. The
# package itself is installed editable with no build isolation, so its build backend comes from the lock too.
$(BIN)/.installed: requirements/dev.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpu-platform needs Python 3.11+: make PYTHON=python3.11 ...")'
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || { echo "$(PYTHON) cannot create virtualenvs: install python3-venv (Debian/Ubuntu)"; exit 1; }
	@echo "setup: installing the locked tools and both clouds' SDKs into $(VENV) (~1 GB, a few minutes the first time)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on --require-hashes -r requirements/dev.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@echo "setup: done. The CLI is $(BIN)/gpu-platform (or: source $(VENV)/bin/activate, then gpu-platform --help)"
	touch $@

setup: $(BIN)/.installed

## Render a stack offline into out/$(STACK) (no Pulumi CLI, cloud or cluster needed)
synth: setup
	$(BIN)/gpu-platform synth $(STACK)

synth-all: setup
	for s in dev-aws prod-aws dev-gcp prod-gcp local dra-existing starter-aws; do $(BIN)/gpu-platform synth $$s || exit $$?; done

## Validate a stack and evaluate the policy pack, writing nothing
check: setup
	$(BIN)/gpu-platform check $(STACK)

## The test suite (what CI runs); it lists its 25 slowest tests, so the next slow one shows in every run.
## Bytecode is written (into the git-ignored __pycache__) even where the environment sets PYTHONDONTWRITEBYTECODE:
## without it each xdist worker rewrote and compiled all ~160 test modules' assertions on every run (~4.5 s of
## collection per worker on 2 cores, 1 s with pytest's rewrite cache), and every synth a test runs in a subprocess
## compiled the package again.
test: setup
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n auto --durations=25

## The plan page in a real browser (tests/test_plan_html_browser.py): the system's Chromium (Debian: apt-get install
## chromium; .ci/run installs it) driven by Playwright from the dev lock, offline. Part of `make test` too, where it
## skips without chromium outside CI.
browser-test: setup
	@command -v chromium >/dev/null 2>&1 || { echo "browser-test needs chromium: apt-get install chromium (never 'playwright install')"; exit 1; }
	$(BIN)/python -m pytest -p no:xdist tests/test_plan_html_browser.py

## The cluster tests: every stack on a real control plane on loopback (etcd 3.6, kube-apiserver and
## kube-controller-manager 1.35, built from Go modules into a per-user cache by scripts/cluster-bins.sh: about
## 10-25 minutes the first time on 2 cores, then cached). Needs Go and openssl.
cluster-test: setup
	@bin="$$(scripts/cluster-bins.sh)" && GPU_PLATFORM_KUBE_BIN="$$bin" $(BIN)/python -m pytest -p no:xdist tests/cluster

## The scheduler tests: the programs that decide, in the loop. The cluster tests' control plane plus kube-scheduler
## 1.35, the real Kueue v0.19.2 controller manager (out of cluster, the stack's rendered configuration, its webhooks
## served and called) and kwok nodes for every pool at its maximum size; explain's verdict on every workload of the
## corpus (examples/, tests/sched/corpus/) must be what Kueue and kube-scheduler do; and day 2 under load: a stack
## deployed by the real engine, its workloads running, four stack changes previewed and applied (issue 38.4). Kueue
## and helm are built from Go modules by scripts/sched-bins.sh, the engine by scripts/engine-bins.sh (minutes the
## first time, then cached).
sched-test: setup
	@kube="$$(scripts/cluster-bins.sh)" && sched="$$(scripts/sched-bins.sh)" && engine="$$(scripts/engine-bins.sh)" && \
	  GPU_PLATFORM_KUBE_BIN="$$kube" GPU_PLATFORM_SCHED_BIN="$$sched" GPU_PLATFORM_ENGINE_BIN="$$engine" \
	  $(BIN)/python -m pytest -n 3 --durations=10 tests/sched

## The engine tests: the program through the real Pulumi engine (CLI v3.274.1) and kubernetes provider, both
## built from Go modules by scripts/engine-bins.sh (about 15 minutes the first time, then cached), on the
## cluster tests' control plane with kube-scheduler and kwok nodes: local with its charts from upstream/charts
## (interrupted up, preview, up, a GPU Job on its pool, destroy), and the add-ons-off day-2 checks.
engine-test: setup
	@kube="$$(scripts/cluster-bins.sh)" && engine="$$(scripts/engine-bins.sh)" && \
	  GPU_PLATFORM_KUBE_BIN="$$kube" GPU_PLATFORM_ENGINE_BIN="$$engine" $(BIN)/python -m pytest -p no:xdist tests/engine

## The provider plugins one stack uses, at the lock's versions (kubernetes; aws or gcp only on their stacks), for
## a deploy with PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true (docs/deploy.md).
# The Pulumi CLI, where a target needs it: said once, with where to get it, instead of a shell's "not found"
PULUMI ?= pulumi
need-pulumi:
	@command -v $(PULUMI) >/dev/null 2>&1 || { echo "this target needs the Pulumi CLI ($(PULUMI) is not on PATH): install it with 'curl -fsSL https://get.pulumi.com | sh' (https://www.pulumi.com/docs/iac/download-install/), or set PULUMI=/path/to/pulumi" >&2; exit 2; }

## Print what the platform decides (pools, tenants, add-ons), the cost per hour, or explain a workload: offline
plan: setup
	$(BIN)/gpu-platform plan $(STACK)

cost: setup
	$(BIN)/gpu-platform cost $(STACK)

## make explain WORKLOAD=examples/mig-inference-deployment.yaml [STACK=prod-aws]
explain: setup
	@test -n "$(WORKLOAD)" || { echo "usage: make explain WORKLOAD=<manifests.yaml> [STACK=<stack>]" >&2; exit 2; }
	$(BIN)/gpu-platform explain $(STACK) $(WORKLOAD)

plugins: setup need-pulumi
	@test -n "$(STACK)" || { echo "usage: make plugins STACK=<stack>" >&2; exit 2; }
	@$(BIN)/gpu-platform plugins $(STACK) | while read -r kind name version; do \
	  $(PULUMI) plugin install "$$kind" "$$name" "$$version" || exit 1; done

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## The documentation site (docs/, mkdocs.yml) into site/: --strict fails on a broken link or anchor inside the site
## and on a page missing from the nav (external links are not checked: CI is offline)
docs: setup
	$(BIN)/mkdocs build --strict --quiet

## The generated pages (stack-file reference, policy table) equal what the schema and the pack give, and the site builds
docs-check: setup
	$(BIN)/python -m components.cli.docs --check
	$(BIN)/mkdocs build --strict --quiet

## Synth generated specs (20, 200 and 1000 tenants) against a fair floor: the same resources, plain classes (figures
## dated, with the machine, into tests/bench_figures.md); and,
## when the engine is built, a real-engine preview against a floor of the same resources (tests/bench_engine.py)
bench: setup
	$(BIN)/python tests/bench_synth.py --record tests/bench_figures.md
	@if kube="$$(scripts/cluster-bins.sh --print 2>/dev/null)" && engine="$$(scripts/engine-bins.sh --print 2>/dev/null)"; then \
	  GPU_PLATFORM_KUBE_BIN="$$kube" GPU_PLATFORM_ENGINE_BIN="$$engine" $(BIN)/python tests/bench_engine.py; \
	else echo "bench: the real-engine preview needs the engine and control plane: make engine-test builds them"; fi

## Rewrite tests/snapshots/urns/<stack>.txt from the current code (refuses to drop a URN with no alias
## and no CHANGELOG.md note: the engine would delete that resource in a deployed stack)
urn-snapshots: setup
	$(BIN)/python -m components.cli.urns

## After a change to what the platform decides: tests/snapshots/plans/<stack>.json (review the diff)
plan-snapshots: setup
	$(BIN)/python -m components.cli.plans

## Mutation testing over components/ and policies/ (slow, not in CI): make mutate [MODULE=components/plan/derive.py]
## mutmut 3 works in a copy of the tree (mutants/, git-ignored).
MODULE ?=
mutate: setup
	$(BIN)/mutmut run $(if $(MODULE),"$(subst /,.,$(basename $(MODULE))).*")
	$(BIN)/python scripts/mutation_report.py $(if $(MODULE),$(subst /,.,$(basename $(MODULE))))

## The score over the whole tree, estimated from a uniform random sample of its ~23,600 mutants (about an hour on
## 2 cores for 600): make mutate-sample [SIZE=600] [SEED=18]; prints the score with its 95 % interval.
SIZE ?= 600
SEED ?= 18
mutate-sample: setup
	$(BIN)/python scripts/mutation_sample.py pick --size $(SIZE) --seed $(SEED) > /dev/null
	$(BIN)/mutmut run $$(cat mutants/sample.txt)
	$(BIN)/python scripts/mutation_sample.py score

schema: setup
	$(BIN)/gpu-platform schema > stack.schema.json

## provider/schema.json: the component package's schema, from GpuPlatform's typed arguments and outputs
## (tests/test_component_package.py compares it with what the provider serves over gRPC)
component-schema: setup
	cd provider && ../$(BIN)/python write_schema.py

## The policy pack's own virtualenv, policies/.venv (PulumiPolicy.yaml: virtualenv: .venv), from
## policies/requirements.txt. Not `pulumi install` inside policies/: that installs the program (pulumi#16605).
POLICY_VENV := policies/.venv
$(POLICY_VENV)/.installed: policies/requirements.txt
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || { echo "$(PYTHON) cannot create virtualenvs: install python3-venv (Debian/Ubuntu)"; exit 1; }
	$(PYTHON) -m venv $(POLICY_VENV)
	$(POLICY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r policies/requirements.txt
	touch $@

policy-venv: $(POLICY_VENV)/.installed

## Regenerate policies/pack_data.json (the facts the self-contained pack takes from components)
policy-data: setup
	$(BIN)/python -m components.cli.policy_data

## Refresh the hashed lock files from the ranges (pyproject.toml, requirements/build.in, policies/requirements.in):
## the newest versions inside the ranges, resolved for every platform, Python 3.11. Commit the three files.
## `make lock UPGRADE=` keeps today's pins where the ranges still allow them (only adds what is new).
UV_COMPILE := $(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes --custom-compile-command "make lock"
UPGRADE ?= --upgrade
lock: setup
	$(UV_COMPILE) $(UPGRADE) pyproject.toml --extra aws --extra gcp -o requirements.txt
	$(UV_COMPILE) $(UPGRADE) pyproject.toml requirements/build.in --extra aws --extra gcp --extra dev -c requirements.txt -o requirements/dev.txt
	$(UV_COMPILE) $(UPGRADE) policies/requirements.in -c requirements.txt -o policies/requirements.txt

## Refresh upstream/ (the project's copy of the upstream contracts) from ../shared/upstream
refresh-upstream:
	$(PYTHON) scripts/refresh_upstream.py

clean:
	rm -rf out mutants site $(VENV) $(POLICY_VENV) stack.schema.json
