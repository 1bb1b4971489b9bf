# Cloud Application Delivery Service API v2.
# Everything needs only Go (modules come from the Go module proxy).

FUNCTIONS := $(notdir $(wildcard functions/*))
BUILD     := .build
GO        ?= go

# Every go command make runs compiles with -trimpath, the go commands that
# tests start too (they inherit GOFLAGS). Without it the build cache keys
# each of the project's packages by its directory as well as its
# contents, so a clean checkout in a new directory, which is what CI
# tests, compiled every package again, with and without the race
# detector: one package's tests took 24.7 s in a fresh clone where they
# took 5.7 s in the tree that had run them; with -trimpath, 2.0 s
# (docs/performance.md, "A clean checkout"). Panics and race reports then
# name files by import path (cads/shared/store/reapply.go).
export GOFLAGS := -trimpath $(GOFLAGS)

.PHONY: run test build clean vet fuzz bench help lint

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

run: ## the whole platform on 127.0.0.1 (API on :3000, API_ADDR overrides; REALISTIC=1 or a seed: DynamoDB in realistic mode)
	$(GO) build -o $(BUILD)/local ./infra/cmd/local
	exec $(BUILD)/local $(if $(REALISTIC),-realistic='$(REALISTIC)')

RATE ?= 25
.PHONY: traffic
traffic: ## make run plus a stand-in edge: a demo application and address set with live metrics (RATE requests/s, default 25)
	$(GO) build -o $(BUILD)/traffic ./infra/cmd/traffic
	exec $(BUILD)/traffic -rate $(RATE)

# Every pass runs its tests through infra/cmd/testrun, go test with the
# test binaries kept between runs (in the user cache directory): it links
# a package's test binary again only when the go command finds it out of
# date, and runs it as go test would. go test linked all 61 every time,
# about a quarter of make test's CPU on a tree that had not changed
# (docs/performance.md, "Test suite time"). Its ok lines give each
# binary's CPU seconds as well as its wall time.
#
# make test runs in two stages, each a make -j of targets (the machine
# has two cores; the suite is CPU-bound, so what runs beside what decides
# its wall time, docs/performance.md "Test suite time"):
#   stage 1: go vet, test-race and test-realistic at once: one pass that
#            keeps both cores busy beside one that mostly waits (on queues,
#            workers and the realistic DynamoDB's lag);
#   stage 2: test-unraced, test-race-gateway and test-unraced-light at
#            once (the cost tour counts round trips from call times: they
#            rely on parallel calls overlapping, and failed now and then
#            beside stage 1's CPU-bound race pass).
# 1. test-race: the race detector over the code that ships and the code
#    that runs it concurrently: shared/... and functions/... (every
#    handler, worker, store and engine, with their own concurrency
#    tests), the local platform's moving parts (gateway, queues, the
#    in-process runtime); beside it, pass 3 (test-realistic).
#    test-race-gateway: the gateway suite's tests that send requests at
#    once (TEST_RACE_GATEWAY: eight clients on one item, quotas raced by
#    concurrent creates, the realistic flows for their first seed), with
#    the race detector, in stage 2; the unraced pass skips them
#    (TEST_NO_RACE_SKIP).
#    test-unraced-light, in stage 2: the tests that skip their volumes
#    under the race detector, in full (TEST_NO_RACE_RUN, below), and the
#    full property counts of the pure packages (TEST_ALSO_UNRACED).
# 2. test-unraced: without it, on the plain stand-ins, what is sequential
#    HTTP against the local platform or tooling: the rest of the gateway
#    suites (every route's tests, the isolation invariant), the cost tour
#    (calls and capacity per endpoint and per list at scale), the
#    contract's and template's checks, the generated clients, the
#    commands. Under the race detector these were a third of the suite's
#    CPU (about 130 of 420 CPU s, each
#    test binary timed through go test -exec) for requests sent one after
#    another, whose handlers the first pass watches already.
# 3. test-realistic: the suites through the local gateway (every route's
#    tests, the isolation invariant, the cost tour's flows) once more on a
#    DynamoDB that behaves as AWS documents it (docs/local-platform.md,
#    Realistic mode): index and eventually consistent reads up to 1 s
#    behind, 10 % of transactions cancelled for a conflict, 30 % of
#    batches partly unprocessed, 2 % of calls throttled. The seed is fixed
#    so that a failure replays (CADS_DYNAMO_REALISM=<seed> go test ...);
#    TEST_REALISM=<spec> runs another. This pass asks what DynamoDB's
#    behaviours do to the flows; the retry path they drive has
#    race-enabled tests of its own (shared/ddb), so it runs without the
#    race detector.
# testrun runs GOMAXPROCS packages at a time by default; several packages
# spend much of their wall time waiting on queues and workers, so four at a
# time keep two cores busy (docs/performance.md, "Test suite time"). The
# local platform's slow tests are packages of their own (infra/local/costtour,
# isolation, inproc) so that they run beside the rest. The timeout is per
# package, with room for a loaded machine. The test binaries' heaps are
# small and short-lived, so they collect four times less often (GOGC=400:
# about 9% less CPU, measured in docs/performance.md); functions are not
# affected. Test binaries are linked without DWARF and symbol table
# (-ldflags='-s -w': a quarter less link CPU per binary with -w, a tenth
# more with -s; race reports and panics still name function, file and
# line, from the runtime's own tables).
# A race-enabled binary sleeps a second before it exits (the race
# runtime's atexit_sleep_ms, default 1000, to let reports flush): once per
# test binary, 40-odd seconds of slots held by sleeping processes.
# The race detector watches every package of the project, every module a
# function links and the standard library. The two in-process stand-ins
# for AWS (minidyn's DynamoDB, goaws' SQS) are compiled without it: no
# function may link them (TestUnracedAreLocalOnly); our code reaches them
# through HTTP requests (a test's bulk load, localaws.Dynamo.Load, hands
# over items it does not change afterwards), so they share no memory our
# code writes.
# testrun starts packages in the order given: the longest go first, so
# that none of them is a tail run on one core at the end. It builds with
# go test's vet off: go vet has just run every analyzer it would, and
# more.
TEST_PACKAGES_AT_ONCE ?= 4
TEST_GOGC ?= 400
TEST_UNRACED := github.com/truora/minidyn/... github.com/Admiral-Piett/goaws/...
TEST_FIRST := ./shared/tests ./shared/roles ./shared/access ./shared/store \
	./shared/tasks ./infra/local/inproc ./shared/addresssets ./shared/logs
# Packages tested without the race detector (pass 2); `go list` patterns.
# Pure packages: no goroutine, no lock, no shared state in their code or
# their tests (the race detector has nothing to watch there), so they are
# tested once, without it; linking each again with the race detector cost
# stage 1 about a second of CPU per package.
TEST_PURE := ./shared/builtin ./shared/domain ./shared/ids ./shared/listmerge \
	./shared/names ./shared/patch ./shared/retry ./infra/routegen
TEST_NO_RACE := ./infra/local ./infra/local/isolation ./infra/local/costtour \
	./infra/clientgen ./infra/apispec ./infra/sam ./infra/repotest ./infra/cmd/... \
	$(TEST_PURE)
TEST_NO_RACE_FIRST := ./infra/local/costtour ./infra/local ./infra/clientgen ./infra/local/isolation
# The gateway suite's tests whose clients send requests at once: they run
# with the race detector too. TestFlowsOnRealisticDynamoDB replays its
# flows for each of its seeds (realisticSeeds); with the race detector, for
# the first only: a second seed draws other lags and conflicts for the same
# code, which the unraced pass replays (both seeds), and it was about ten
# seconds of this pass when it ran alone at the end of make test.
TEST_RACE_GATEWAY := ^(TestConcurrentPatchesAllApply|TestFinding27_Quotas|TestFinding27_KeyQuotas|TestFinding27_TestRuns|TestFlowsOnRealisticDynamoDB)$$
TEST_RACE_GATEWAY_SKIP := ^TestFlowsOnRealisticDynamoDB$$/^seed=2611$$
# The gateway's concurrent-client tests that run with the race detector
# only: on the plain stand-ins without it they would be the same requests
# to the same code, and two passes racing eight clients at once on two
# cores ran their functions out of time (a 429 at 5e88906).
TEST_NO_RACE_SKIP := ^(TestConcurrentPatchesAllApply|TestFinding27_Quotas|TestFinding27_KeyQuotas|TestFinding27_TestRuns)$$
# Pure packages whose property tests run a tenth of their cases with the
# race detector (their raceEnabled constant, a //go:build race file) and
# every case without it, here in pass 2: shared/authz's (about 9 of its
# 14 CPU s under the race detector went to role sets that only the
# unraced code needs to see).
TEST_ALSO_UNRACED := ./shared/authz
# Tests that drive one goroutine through large volumes, run here without
# the race detector: the byte budget (built only without it, //go:build
# !race: megabytes through a response budget, a tenth of the suite's CPU
# under it), and tests that skip their volumes under it
# (testenv.RaceEnabled: a thousand held roles, account trees a thousand
# deep, a thousand tasks, multi-megabyte uploads (the largest accepted
# archive, a megabyte through the gateway), a second property
# seed). The paths they drive run race-enabled on small data.
# TestSkippedUnderRaceRunWithout (infra/repotest) checks this list.
TEST_NO_RACE_RUN := ^(TestSetStaysWithinTheResponseBudget|TestDeciderListCostDoesNotGrowWithHeldRoles|TestAllowedCostDoesNotGrowWithHeldOrDefinedRoles|TestAuthorizeRoundTripsDoNotGrowWithDepthOrRoles|TestTasksPageWithLinks|TestWhoCanMatchesTheAuthorizer|TestCorruptAndOversizeStoreNothing|TestLifecycleAndRoundTrips|TestThroughTheLocalPlatform)$$
TEST_NO_RACE_IN := ./shared/addresssets ./shared/access ./shared/tasks ./shared/roles ./shared/tests
TEST_REALISM ?= 26
TEST_REALISTIC := ./infra/local/costtour ./infra/local ./infra/local/isolation
TEST_FLAGS := '-ldflags=-s -w'
TESTRUN := $(BUILD)/testrun -timeout 30m
TEST_RACE_ENV := GORACE="atexit_sleep_ms=0 $(GORACE)" GOGC=$(TEST_GOGC)
TEST_RACE_FLAGS := -race $(foreach p,$(TEST_UNRACED),-gcflags=$(p)=-race=false) $(TEST_FLAGS)
.PHONY: test-race test-race-gateway test-unraced test-unraced-light test-realistic
test: ## every test (the code that ships with the race detector) against in-process DynamoDB and SQS servers; the gateway suites again in realistic mode
	@command -v node >/dev/null 2>&1 || echo "NOTICE: node is not installed: TestTypeScriptClientCompiles (infra/clientgen) will be SKIPPED, no TypeScript client is checked; install Node.js 20 or later with npm" >&2
	$(MAKE) --no-print-directory -j3 vet test-race test-realistic
	$(MAKE) --no-print-directory -j3 test-unraced test-race-gateway test-unraced-light

test-race: $(BUILD)/testrun ## shared/, functions/ and the local platform's moving parts, with the race detector
	$(TEST_RACE_ENV) $(TESTRUN) -p $(TEST_PACKAGES_AT_ONCE) $(TEST_FIRST) \
		$$($(GO) list ./... | grep -v -x -F $$($(GO) list $(TEST_NO_RACE) | sed 's/^/-e /')) -- $(TEST_RACE_FLAGS)

test-race-gateway: $(BUILD)/testrun ## the gateway suite's concurrent-client tests, with the race detector
	$(TEST_RACE_ENV) $(TESTRUN) -run '$(TEST_RACE_GATEWAY)' -skip '$(TEST_RACE_GATEWAY_SKIP)' ./infra/local -- $(TEST_RACE_FLAGS)

test-unraced: $(BUILD)/testrun ## the rest of the gateway suites, the cost tour, the contract's and tools' tests, on the plain stand-ins
	GOGC=$(TEST_GOGC) $(TESTRUN) -p $(TEST_PACKAGES_AT_ONCE) -skip '$(TEST_NO_RACE_SKIP)' $(TEST_NO_RACE_FIRST) $(TEST_NO_RACE) -- $(TEST_FLAGS)

test-unraced-light: $(BUILD)/testrun ## without the race detector, one package at a time: what skips its volumes under it, and the pure packages' full property counts
	GOGC=$(TEST_GOGC) $(TESTRUN) -p 1 -run '$(TEST_NO_RACE_RUN)' $(TEST_NO_RACE_IN) -- $(TEST_FLAGS)
	GOGC=$(TEST_GOGC) $(TESTRUN) -p 1 $(TEST_ALSO_UNRACED) -- $(TEST_FLAGS)

test-realistic: $(BUILD)/testrun ## the suites through the local gateway on the realistic DynamoDB (seed TEST_REALISM)
	CADS_DYNAMO_REALISM='$(TEST_REALISM)' GOGC=$(TEST_GOGC) $(TESTRUN) -p 3 $(TEST_REALISTIC) -- $(TEST_FLAGS)

# The test runner (infra/cmd/testrun): go test, with the test binaries
# kept between runs and linked again only when out of date.
$(BUILD)/testrun: FORCE
	$(GO) build -o $@ ./infra/cmd/testrun

# The two nested modules: the DynamoDB stand-in fork (its own upstream
# tests plus ours) and the authorization engine comparison (OPA and Casbin
# against authz.Decide on the same requests). They are modules of their
# own so that their test dependencies stay out of the main go.mod; go test
# ./... above does not reach them, so CI runs this target after make test.
# Without the race detector, as make test compiles the fork: it is a
# stand-in, not code a function links. Timed in docs/performance.md.
NESTED_MODULES := infra/localaws/minidyn shared/authz/compare
.PHONY: test-nested
test-nested: ## go vet and the tests of the nested modules (the DynamoDB stand-in fork, the authz engine comparison)
	set -e; for m in $(NESTED_MODULES); do \
		(cd $$m && $(GO) vet ./... && GOGC=$(TEST_GOGC) $(GO) test -vet=off -count=1 -timeout 30m $(TEST_FLAGS) ./...); \
	done

build: $(FUNCTIONS:%=$(BUILD)/%.zip) ## one Lambda zip per function (provided.al2023, arm64)

# The one way a function is compiled, for `make build` and `sam build`.
LAMBDA_GO_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w'

$(BUILD)/%.zip: FORCE
	@mkdir -p $(BUILD)/$*
	$(LAMBDA_GO_BUILD) -o $(BUILD)/$*/bootstrap ./functions/$*
	$(GO) run ./infra/cmd/pack $(BUILD)/$*/bootstrap $@
	@ls -l $@

# sam build (Metadata BuildMethod: makefile) runs `make build-<LogicalId>`
# in a copy of the repository with ARTIFACTS_DIR set; each target compiles
# the function's folder exactly as `make build` does. A test checks that
# every function of template.yaml has its target here.
SAM_FUNCTIONS := AuthorizerFunction=authorizer UsersFunction=users AccountsFunction=accounts \
	RolesFunction=roles NotifierFunction=notifier ApplicationsFunction=applications \
	TasksFunction=tasks TaskWorkerFunction=task-worker TestsFunction=tests \
	TestRunnerFunction=test-runner AddressSetsFunction=address-sets MetricsFunction=metrics \
	AggregatorFunction=aggregator LogsFunction=logs InstallerFunction=installer

define sam_build_target
.PHONY: build-$(1)
build-$(1):
	$$(if $$(ARTIFACTS_DIR),,$$(error ARTIFACTS_DIR is not set: sam build sets it))
	$$(LAMBDA_GO_BUILD) -o $$(ARTIFACTS_DIR)/bootstrap ./functions/$(2)
endef
$(foreach f,$(SAM_FUNCTIONS),$(eval $(call sam_build_target,$(word 1,$(subst =, ,$(f))),$(word 2,$(subst =, ,$(f))))))

CFN_LINT_INSTALL := pip install 'cfn-lint==1.51.*' 'aws-sam-translator==1.110.*'
lint: ## cfn-lint (no errors, no warnings) and the SAM translator on template.yaml
	@command -v cfn-lint >/dev/null 2>&1 || { echo "make lint: cfn-lint is not installed: $(CFN_LINT_INSTALL)" >&2; exit 1; }
	@python3 -c 'import samtranslator' 2>/dev/null || { echo "make lint: aws-sam-translator is not installed: $(CFN_LINT_INSTALL)" >&2; exit 1; }
	cfn-lint --version
	cfn-lint template.yaml
	python3 infra/sam/translate.py template.yaml > /dev/null
	@echo "make lint: template.yaml passes cfn-lint and the SAM translator"

# The table of the next deployment must be reachable from the released one
# in one stack update (infra/sam TestTemplateTableChangeDeploysFromTheRelease,
# docs/deploy.md "Schema changes"): run this when a release ships, and commit.
.PHONY: baseline
baseline: ## record template.yaml as the last released template (infra/release/template.yaml), when a release ships
	cp template.yaml infra/release/template.yaml

FUZZTIME ?= 10s
fuzz: ## each fuzz target for FUZZTIME (default 10s)
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizePattern$$' -fuzztime $(FUZZTIME) ./shared/authz
	$(GO) test -run '^$$' -fuzz '^FuzzCheckPath$$' -fuzztime $(FUZZTIME) ./shared/authz
	$(GO) test -run '^$$' -fuzz '^FuzzAccounts$$' -fuzztime $(FUZZTIME) ./shared/accounts
	$(GO) test -run '^$$' -fuzz '^FuzzRoles$$' -fuzztime $(FUZZTIME) ./shared/roles
	$(GO) test -run '^$$' -fuzz '^FuzzUsers$$' -fuzztime $(FUZZTIME) ./shared/users
	$(GO) test -run '^$$' -fuzz '^FuzzApplications$$' -fuzztime $(FUZZTIME) ./shared/applications
	$(GO) test -run '^$$' -fuzz '^FuzzTasks$$' -fuzztime $(FUZZTIME) ./shared/tasks
	$(GO) test -run '^$$' -fuzz '^FuzzAddressSets$$' -fuzztime $(FUZZTIME) ./shared/addresssets
	$(GO) test -run '^$$' -fuzz '^FuzzMetricsQuery$$' -fuzztime $(FUZZTIME) ./shared/metrics
	$(GO) test -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(FUZZTIME) ./shared/metrics
	$(GO) test -run '^$$' -fuzz '^FuzzTests$$' -fuzztime $(FUZZTIME) ./shared/tests
	$(GO) test -run '^$$' -fuzz '^FuzzOpenArchive$$' -fuzztime $(FUZZTIME) ./shared/tests
	$(GO) test -run '^$$' -fuzz '^FuzzParseFilter$$' -fuzztime $(FUZZTIME) ./shared/logs
	$(GO) test -run '^$$' -fuzz '^FuzzPatch$$' -fuzztime $(FUZZTIME) ./shared/patch

BENCHTIME ?= 10s
bench: ## Go benchmarks, a bounded load run of the local platform (BENCHTIME per endpoint), then make run's server CPU per request under wrk for BENCHTIME (docs/performance.md)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	cd shared/authz/compare && $(GO) test -run '^$$' -bench . -benchmem
	$(GO) run ./infra/cmd/bench -duration $(BENCHTIME) -c 8
	$(GO) run ./infra/cmd/bench -wrk -duration $(BENCHTIME) -c 8

.PHONY: scale
scale: ## load simulation of the key design: hottest DynamoDB partition keys at the design load against the per-partition limits (docs/scale.md; about a minute)
	$(GO) run ./infra/cmd/scale

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BUILD)

.PHONY: FORCE
FORCE:
