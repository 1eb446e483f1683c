# fabricflow — top-level commands. `make test` is what CI runs (.ci/run).
.PHONY: test deps lint unit build bench clean-ovs demo e2e clean-mininet

test:            ## install what is missing, then run every check and test
	./scripts/test.sh

deps:            ## apt packages + Open vSwitch (userspace datapath) running
	./scripts/install-deps.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings

unit:            ## tests that need no root and no Open vSwitch
	FABRICFLOW_SKIP_OVS=1 cargo test --workspace --locked

build:
	cargo build --workspace --release --locked

bench:           ## criterion benchmarks, the agent's CNM latency distribution (numbers, not pass/fail; on OVS: scripts/bench-agent-latency.sh)
	cargo bench --workspace

clean-ovs:       ## remove bridges left by an interrupted test run
	./scripts/clean-ovs.sh

# Mininet demo (issue 6): Dragonfly(2,4,2) (36 switches, 72 hosts) under ADV+1, minimal vs Valiant
# vs QCN-SW (controller + agent, combined variant). Global links are the scarce resource (1.25 Mb/s;
# host and local 5): at twice these rates this 2-core machine, not the links, limits QCN-SW there
# (the emulated congestion point's cost, mininet/README.md "Link rates"). Three runs per mode
# (seeds 1-3, medians; ~16 min), 60 s each, the first 20 s not counted: TCP needs ~8 s to fill
# these slow links even under minimal routing and QCN-SW ~15 s to settle, and the steady state is
# what is compared. Override e.g. DEMO_REPEAT=1 for a ~6 min look, or the smaller fabric at full
# rates: DEMO_TOPO=dragonfly:p=1,a=2,h=3 DEMO_BW=10 DEMO_GLOBAL_BW=2.5 (~12 min). Standard frames,
# as mininet/README.md "QCN-SW results" measured the demo; DEMO_MTU=9000 is the matrix's setting,
# under which the machine bounds it no longer at twice these rates ("Jumbo frames" there).
DEMO_TOPO ?= dragonfly:p=2,a=4,h=2
DEMO_DURATION ?= 60
DEMO_WARMUP ?= 20
DEMO_BW ?= 5
DEMO_GLOBAL_BW ?= 1.25
DEMO_MODES ?= minimal,valiant,qcnsw-combined
DEMO_REPEAT ?= 3
DEMO_MTU ?= 1500
DEMO_OUT ?= /tmp/fabricflow-demo
PY := /usr/bin/python3

demo:            ## Mininet: Dragonfly ADV+1, minimal vs valiant vs qcnsw-combined, table + plots
	./scripts/install-deps.sh
	cargo build --release --locked -p fabricflow-controller -p fabricflow-agent
	$(PY) mininet/run.py --topology $(DEMO_TOPO) --traffic adv+1 --modes $(DEMO_MODES) \
	    --duration $(DEMO_DURATION) --warmup $(DEMO_WARMUP) --host-bw $(DEMO_BW) \
	    --local-bw $(DEMO_BW) --global-bw $(DEMO_GLOBAL_BW) --mtu $(DEMO_MTU) --repeat $(DEMO_REPEAT) \
	    --out $(DEMO_OUT)
	@echo "demo: plots in $(DEMO_OUT)/throughput.png, group0-switches.png and p-group0.png"

e2e:             ## Mininet end-to-end tests (root)
	./tests/run-e2e.sh

clean-mininet:   ## remove what an interrupted Mininet run left (our bridges, veths, host shells only)
	$(PY) mininet/ffclean.py
	./scripts/clean-ovs.sh
	@echo "clean-mininet: for a full 'mn -c' (deletes EVERY bridge and kills controllers by name, also other tests'), run it by hand"
