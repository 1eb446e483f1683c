# fabricflow — top-level commands. `make test` is what CI runs (.ci/run).
.PHONY: test deps lint unit build bench clean-ovs

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

bench:           ## criterion benchmarks (numbers, not pass/fail)
	cargo bench --workspace

clean-ovs:       ## remove bridges left by an interrupted test run
	./scripts/clean-ovs.sh
