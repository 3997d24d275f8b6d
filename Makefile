# The two commands a newcomer needs: `make run` and `make test`.
CARGO ?= cargo
# Where cargo puts its builds (the load driver is run from there).
CARGO_TARGET_DIR_OR_DEFAULT = $(or $(CARGO_TARGET_DIR),target)

.PHONY: run test lint fmt openapi bench check install

run:
	$(CARGO) run -p promptgate-server --bin promptgate -- serve

# Puts the `promptgate` binary into ~/.cargo/bin (on PATH after a rustup install).
install:
	$(CARGO) install --locked --path crates/promptgate-server --bin promptgate

test:
	scripts/with-postgres.sh $(CARGO) nextest run --workspace --no-fail-fast

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

openapi:
	$(CARGO) run -q -p promptgate-server --bin promptgate -- openapi > openapi.yaml

bench:
	$(CARGO) bench -p promptgate-core
	$(CARGO) bench -p promptgate-llm
	$(CARGO) bench -p promptgate-mcp
	$(CARGO) build --release -p promptgate-loadtest
	scripts/with-postgres.sh $(CARGO_TARGET_DIR_OR_DEFAULT)/release/promptgate-loadtest --gateway-workers 1
