# coral2-pipeline — every target installs what it needs itself.
#   make demo    run the embedded simulated system
#   make test    lint, type-check, layer contracts, then the test suite
#   make bench   print the benchmark figures
#   make chaos   1,000 jobs while processes are killed at random (CHAOS_ARGS=--jobs N --seed S)
#   make test-flux    the real-Flux tier alone, against the Flux installed here (FLUX_PREFIX)
#   make dws-real     build the real Kubernetes API server and etcd (and find DWS and nnf-sos)
#   make test-dws-real  the real-DWS tier alone, against what make dws-real built
#   make record-dws   record the real DWS's answers into tests/dws/recorded/ (DWS_VERSION, NNF_SOS_VERSION)
#   make record-flux  record the installed Flux's answers into tests/flux/recorded/
#   make mutate  mutation testing of the rules in pipeline/states (mutmut; MUTATE_ARGS=--list)

SHELL := /bin/bash
PYTHON ?= python3
# the suite's processes (pytest-xdist, one test module at a time each): most tests wait on
# real processes, so more processes than cores pay; PYTEST_WORKERS=0 runs it in one process
PYTEST_WORKERS ?= 4
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: venv demo test test-all test-flux record-flux record-dws dws-real test-dws-real lint typecheck contracts unit bench chaos mutate redis kubectl promtool nft clean help

help:
	@echo "make demo | test | test-all | test-flux | record-flux | test-dws-real | record-dws | bench | chaos | mutate | lint | venv | clean"

venv: $(STAMP)

$(STAMP): pyproject.toml simulator/pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "make: $(PYTHON) not found; install Python 3.11 or newer" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "make: Python 3.11 or newer is required ($(PYTHON) is $$($(PYTHON) -V))" >&2; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV) || { echo "make: cannot create a virtualenv; on Debian: apt-get install python3-venv" >&2; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	# the product, and beside it the simulators (their own distribution: the product's
	# wheel holds none) that the demo, the chaos harness and the tests run
	$(BIN)/python -m pip install --quiet -e '.[management,dev]' -e ./simulator
	@touch $(STAMP)

# redis-server: the tests and the demo start their own on a free loopback port.
redis:
	@command -v redis-server >/dev/null && exit 0; \
	echo "make: redis-server missing; installing it with apt-get"; \
	{ $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } \
	  || { echo "make: could not install redis-server (need root or sudo and Debian's apt); install it by hand and retry" >&2; exit 1; }

# kubectl: the tests drive the simulated API server with an admin's real kubectl.
kubectl:
	@command -v kubectl >/dev/null && exit 0; \
	echo "make: kubectl missing; installing Debian's kubernetes-client with apt-get"; \
	{ $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client >/dev/null; } \
	  || { echo "make: could not install kubectl (need root or sudo and Debian's apt); install it by hand and retry" >&2; exit 1; }

# promtool and amtool: the tests check the shipped alert rules and Alertmanager example
# with Prometheus's and Alertmanager's own tools.
promtool:
	@command -v promtool >/dev/null && command -v amtool >/dev/null && exit 0; \
	echo "make: promtool or amtool missing; installing Debian's prometheus and prometheus-alertmanager with apt-get (their services are not started)"; \
	{ $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-alertmanager >/dev/null; } \
	  || { echo "make: could not install promtool and amtool (need root or sudo and Debian's apt); install them by hand and retry" >&2; exit 1; }

# nft: the tests load the compute firewall rule deploy/ ships with the real nft.
nft:
	@command -v nft >/dev/null && exit 0; \
	echo "make: nft missing; installing Debian's nftables with apt-get"; \
	{ $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables >/dev/null; } \
	  || { echo "make: could not install nft (need root or sudo and Debian's apt); install it by hand and retry" >&2; exit 1; }

demo: venv redis
	$(BIN)/coral2-pipeline demo $(DEMO_ARGS)

lint: venv
	$(BIN)/ruff check pipeline node_worker beat_schedules simulator tests benchmarks
	$(BIN)/ruff format --check pipeline node_worker beat_schedules simulator tests benchmarks

typecheck: venv
	$(BIN)/mypy pipeline node_worker beat_schedules simulator/coral2_sim

contracts: venv
	$(BIN)/lint-imports

# the real-Flux tier (tests/flux) runs where a Flux is installed (FLUX_PREFIX, or flux on
# PATH) and is reported "not run" where none is; the tests marked `redundant` run only in
# test-all (pyproject.toml says why each is)
unit: venv redis kubectl promtool nft
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadscope -m 'not redundant' $(PYTEST_ARGS)

test: lint typecheck contracts unit

# test-all: every test, and the generators' longer, random runs
test-all: lint typecheck contracts venv redis kubectl promtool nft
	CORAL2_TRUST_EXAMPLES=$${CORAL2_TRUST_EXAMPLES:-400} \
	CORAL2_BADINPUT_EXAMPLES=$${CORAL2_BADINPUT_EXAMPLES:-25} $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadscope $(PYTEST_ARGS)
	$(MAKE) --no-print-directory mutate

# mutation testing of the rules (docs/testing.md, "Mutation testing"): mutmut changes
# pipeline/states one operator or constant at a time and runs the tests that reach each
# change ([tool.mutmut] in pyproject.toml); the score may not fall under MUTATION_FLOOR
MUTATION_FLOOR ?= 90
mutate: venv redis
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2 > mutants.log 2>&1 || { tail -c 3000 mutants.log; exit 1; }
	$(BIN)/python -m tests.mutation_report --floor $(MUTATION_FLOOR) $(MUTATE_ARGS)

# the real-DWS tier alone, against the stack `make dws-real` built; fails where it has not
test-dws-real: venv redis kubectl
	CORAL2_REQUIRE_DWS=1 $(BIN)/pytest -q -p no:xdist tests/dws_real $(PYTEST_ARGS)

# fails where no Flux is installed: a site runs it against its own
test-flux: venv redis kubectl promtool
	CORAL2_REQUIRE_FLUX=1 $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadscope tests/flux $(PYTEST_ARGS)

record-flux: venv
	$(BIN)/python -m tests.flux.record $(RECORD_ARGS)

# play the DWS scenarios on the real stack make dws-real built; say its releases
record-dws: venv redis kubectl
	$(BIN)/python -m tests.dws.record $(RECORD_ARGS)

bench: venv redis
	$(BIN)/python -m benchmarks $(BENCH_ARGS)

chaos: venv redis
	$(BIN)/python -m coral2_sim.chaos $(CHAOS_ARGS)

# the real Kubernetes API server and etcd, built from the Go modules testenv/go.mod pins
# (through the Go module proxy) into a cache outside the checkout; the real DWS and nnf-sos
# managers go beside them (the proxy serves neither: docs/testing.md, "The real DWS stack")
DWS_REAL_PINS := k8s-v1.34.4_etcd-v3.6.4
DWS_REAL_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/coral2-pipeline/dws-real/$(DWS_REAL_PINS)
dws-real:
	@command -v go >/dev/null || { echo "make dws-real: go not found; install Go 1.25 or newer" >&2; exit 1; }
	cd testenv && go build -trimpath -o "$(DWS_REAL_DIR)/bin/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
	cd testenv && go build -trimpath -o "$(DWS_REAL_DIR)/bin/etcd" go.etcd.io/etcd/server/v3
	@for tool in dws nnf-sos; do [ -x "$(DWS_REAL_DIR)/bin/$$tool" ] \
	  || echo "make dws-real: no $(DWS_REAL_DIR)/bin/$$tool yet: the Go module proxy serves no DataWorkflowServices/dws or NearNodeFlash/nnf-sos; build it from its public source there (docs/testing.md, \"The real DWS stack\")"; done
	@echo "make dws-real: $(DWS_REAL_DIR)/bin"

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build *.egg-info simulator/build simulator/*.egg-info mutants mutants.log
