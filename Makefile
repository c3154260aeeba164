# ringmq build entry point. Every build and test goes through here.
#
# giouring (the pinned io_uring binding) reaches syscall.munmap through
# go:linkname, which Go 1.23+ refuses to link unless -checklinkname=0 is set.
# Exporting it in GOFLAGS makes every `go` call below (and in sub-makes) carry it.
export GOFLAGS := -ldflags=-checklinkname=0

GO       ?= go
BIN      := bin
DATA     ?= ./data
FUZZTIME ?= 60s
# Executions of each Fuzz target inside `make test` (a smoke run, not a campaign).
# Count-based, so a loaded CI machine only runs it slower (see scripts/fuzz.sh).
FUZZSMOKE ?= 20000x
CMDS     := $(notdir $(wildcard cmd/*))
# The version every binary prints for --version (internal/version). A build outside a git
# checkout (a source tarball, a container build without .git) passes VERSION=... itself.
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
# A command-line -ldflags replaces GOFLAGS' -ldflags instead of adding to it, so the
# binaries' flags repeat -checklinkname=0 next to the version stamp.
LDFLAGS  := -checklinkname=0 -X github.com/ringmq/ringmq/internal/version.Version=$(VERSION) \
            -X github.com/ringmq/ringmq/internal/version.Commit=$(COMMIT)

.PHONY: all build run test vet fmtcheck unit fuzz fuzz-smoke bench lint clean

all: build

build:
	@mkdir -p $(BIN)
	@if [ -n "$(CMDS)" ]; then for c in $(CMDS); do $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/$$c ./cmd/$$c || exit 1; done; fi
	$(GO) build ./...

# Broker on 10911 plus the embedded NameServer on 9876, store under ./data (DATA=). PORT= and
# NAMESRV_PORT= change the ports, CONF= names a broker.conf, PROFILE=dev is CONF=conf/dev.conf
# (small files for a laptop), ARGS= passes more flags (--<key>=<value>). Flags win over CONF.
PORT         ?=
NAMESRV_PORT ?=
PROFILE      ?=
CONF         ?= $(if $(PROFILE),conf/$(PROFILE).conf)
ARGS         ?=
run: build
	$(BIN)/mqbroker $(if $(CONF),-c $(CONF)) --storePathRootDir=$(DATA) $(if $(PORT),--listenPort=$(PORT)) \
		$(if $(NAMESRV_PORT),--namesrvListenPort=$(NAMESRV_PORT)) $(ARGS)

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null; git ls-files --others --exclude-standard '*.go' 2>/dev/null)); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Every package runs under the race detector: the ones that start goroutines
# need it, and the pure ones (codec) are cheap enough that one rule serves all.
# The second pass runs what skips under -race: allocation counts (the detector
# allocates on its own). Tests with nothing of the kind (the Go-client end-to-end
# tests, the crash and failover tests) skip in it (testutil.SkipInSecondPass): they
# ran whole in the first. The pinned Go client is never under the detector: the
# tests run it in a driver process they build without -race (internal/goclient),
# so its own data races cannot fail a run.
unit:
	$(GO) test -race -count=1 -timeout 15m ./...
	RINGMQ_SECOND_PASS=1 $(GO) test -count=1 -timeout 15m ./...

# Each Fuzz target for a short smoke run (go test -fuzz takes one target at a time).
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZSMOKE)

fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

test: fmtcheck vet unit fuzz-smoke

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# Broker configurations side by side: starts bin/mqbroker once per configuration (ASYNC mmap,
# ASYNC transient pool, SYNC per flush backend; gnet and std engines), the NATS JetStream
# peer (nats-server with the default sync interval and with sync_interval: always, loaded by
# `nats bench js pub` of the same shape; built by `make tools`) and the limit, `mqbench
# null-server` (answers every send at once, stores nothing), on loopback with a fresh store
# under results/tmp, runs the same load against each in interleaved rounds (3, medians),
# and writes results/<stamp>/report.html, its BENCHMARKS.md tables (with ringmq / limit and
# every server's and client's CPU per message) and the raw runs.
# At most 10 minutes; QUICK=1 at most 2.5. POINTS=1x1,4x16,16x32 runs several load points
# (over budget by default: pair it with fewer SETUPS=a,b); a point e2e@20000 is an open-loop
# end-to-end run at 20000 msgs/s (mqbench e2e; the null server's open-loop send latency beside it). Only WRITE_BENCHMARKS=1 (never with
# QUICK=1) replaces the marked section of ./BENCHMARKS.md; the rest of that file is curated.
# HA=1 then runs the replication benchmark too (scripts/bench-ha.sh: a master and a slave, ASYNC_MASTER
# vs SYNC_MASTER under both flush types at 1×1, 4×16 and 16×32, replication lag, a 2 GiB catch-up; 3
# rounds, about 9 more minutes; with QUICK=1 one round of 2 s runs and a 256 MiB catch-up, about 2) into
# results/ha-<stamp>/report.md; its figures go into BENCHMARKS.md's Replication section by hand.
HA_QUICK := ROUNDS=1 DURATION=2s WARMUP=500ms CATCHUP_BYTES=268435456 CATCHUP_ROUNDS=1
.PHONY: bench-report
bench-report: build tools
	$(BIN)/mqbench suite --broker-bin $(BIN)/mqbroker --results results --nats-bin-dir $(BIN)/tools \
		$(if $(filter 1 true yes,$(QUICK)),--quick) $(if $(filter 1 true yes,$(WRITE_BENCHMARKS)),--write-benchmarks) \
		$(if $(POINTS),--points $(POINTS)) $(if $(SETUPS),--setups $(SETUPS))
	$(if $(filter 1 true yes,$(HA)),BIN=$(BIN) $(if $(filter 1 true yes,$(QUICK)),$(HA_QUICK)) scripts/bench-ha.sh)

# The benchmark peers, pinned in their own module (tools/go.mod) so that the product's go.mod
# stays clean: nats-server v2.15.2 and natscli v0.5.0 (its `nats` command) into bin/tools.
.PHONY: tools
tools:
	@mkdir -p $(BIN)/tools
	cd tools && $(GO) build -o ../$(BIN)/tools/ github.com/nats-io/nats-server/v2 github.com/nats-io/natscli/nats

# mqbench's own cost (issue 17 item 5): mqbench produce against the lean generator on the same
# broker and load, interleaved rounds (scripts/bench-client.sh; ROUNDS, DURATION).
.PHONY: bench-client
bench-client: build
	NO_BUILD=1 BIN=$(BIN) scripts/bench-client.sh

# A local cluster: a name server and two brokerNames, each a master with a slave, on 127.0.0.1 with
# their stores under ./data/cluster. ROLE=SYNC_MASTER for synchronous replication. CONTROLLER=1: controller
# mode instead (three name servers embedding controllers; each group's master elected, and replaced when
# it dies).
.PHONY: cluster
CONTROLLER ?=
cluster: build
	BIN=$(BIN) DATA=$(DATA) CONTROLLER=$(CONTROLLER) scripts/cluster.sh

# Crash test, long form: CRASH_ROUNDS rounds of each TestCrash* test — the broker as a child
# process killed with SIGKILL under SYNC_FLUSH and ASYNC_FLUSH load, power loss through faultfs.FS,
# a SYNC_MASTER killed under load with its slave (also with the transient pool in every round), the
# master of a controller-mode group killed under SYNC load (broker/controlled: failover, the old
# master back as a slave), and the store's own crash tests — each checking every acknowledged
# message afterwards. The short form (2-4 rounds) runs inside `make test`. A failing round logs its
# seed: RINGMQ_CRASH_SEED=<seed> replays it.
CRASH_ROUNDS ?= 20
.PHONY: crash-test
crash-test:
	RINGMQ_CRASH_ROUNDS=$(CRASH_ROUNDS) $(GO) test -race -count=1 -timeout 60m -v -run '^TestCrash' ./store/ ./broker/ ./broker/controlled/

lint: fmtcheck vet

clean:
	rm -rf $(BIN)
