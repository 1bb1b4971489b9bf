# Cloud Application Delivery Service API v2.
# Everything needs only Go (modules come from the Go module proxy).

FUNCTIONS := $(notdir $(wildcard functions/*))
BUILD     := .build
GO        ?= go

.PHONY: run test build clean vet fuzz bench help

help: ## list targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

run: ## the whole platform on 127.0.0.1 (API on :3000, API_ADDR overrides)
	$(GO) build -o $(BUILD)/local ./infra/cmd/local
	exec $(BUILD)/local

RATE ?= 25
.PHONY: traffic
traffic: ## make run plus a stand-in edge: a demo application and address set with live metrics (RATE requests/s, default 25)
	$(GO) build -o $(BUILD)/traffic ./infra/cmd/traffic
	exec $(BUILD)/traffic -rate $(RATE)

test: ## every test, with the race detector, against in-process DynamoDB and SQS servers
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

build: $(FUNCTIONS:%=$(BUILD)/%.zip) ## one Lambda zip per function (provided.al2023, arm64)

$(BUILD)/%.zip: FORCE
	@mkdir -p $(BUILD)/$*
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' -o $(BUILD)/$*/bootstrap ./functions/$*
	$(GO) run ./infra/cmd/pack $(BUILD)/$*/bootstrap $@
	@ls -l $@

FUZZTIME ?= 10s
fuzz: ## each fuzz target for FUZZTIME (default 10s)
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizePattern$$' -fuzztime $(FUZZTIME) ./shared/authz
	$(GO) test -run '^$$' -fuzz '^FuzzCheckPath$$' -fuzztime $(FUZZTIME) ./shared/authz
	$(GO) test -run '^$$' -fuzz '^FuzzAccounts$$' -fuzztime $(FUZZTIME) ./shared/accounts
	$(GO) test -run '^$$' -fuzz '^FuzzRoles$$' -fuzztime $(FUZZTIME) ./shared/rbacadmin
	$(GO) test -run '^$$' -fuzz '^FuzzUsers$$' -fuzztime $(FUZZTIME) ./shared/identity
	$(GO) test -run '^$$' -fuzz '^FuzzApplications$$' -fuzztime $(FUZZTIME) ./shared/applications
	$(GO) test -run '^$$' -fuzz '^FuzzTasks$$' -fuzztime $(FUZZTIME) ./shared/tasks
	$(GO) test -run '^$$' -fuzz '^FuzzAddressSets$$' -fuzztime $(FUZZTIME) ./shared/addresssets
	$(GO) test -run '^$$' -fuzz '^FuzzMetricsQuery$$' -fuzztime $(FUZZTIME) ./shared/metrics
	$(GO) test -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(FUZZTIME) ./shared/metrics
	$(GO) test -run '^$$' -fuzz '^FuzzTests$$' -fuzztime $(FUZZTIME) ./shared/apptests
	$(GO) test -run '^$$' -fuzz '^FuzzOpenArchive$$' -fuzztime $(FUZZTIME) ./shared/apptests
	$(GO) test -run '^$$' -fuzz '^FuzzParseFilter$$' -fuzztime $(FUZZTIME) ./shared/logs
	$(GO) test -run '^$$' -fuzz '^FuzzPatch$$' -fuzztime $(FUZZTIME) ./shared/patch

BENCHTIME ?= 10s
bench: ## Go benchmarks, then a bounded load run of the local platform (BENCHTIME per endpoint; docs/performance.md)
	$(GO) test -run '^$$' -bench . -benchmem ./...
	cd shared/authz/compare && $(GO) test -run '^$$' -bench . -benchmem
	$(GO) run ./infra/cmd/bench -duration $(BENCHTIME) -c 8

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BUILD)

.PHONY: FORCE
FORCE:
