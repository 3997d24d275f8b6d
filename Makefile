# The two commands a newcomer needs: `make run` and `make test`.
CARGO ?= cargo
# Where cargo puts its builds (the load driver is run from there).
CARGO_TARGET_DIR_OR_DEFAULT = $(or $(CARGO_TARGET_DIR),target)

.PHONY: run web test lint fmt openapi bench check install

# The offline demo (config/demo.toml); `make run PORT=8099` listens on 127.0.0.1:8099 instead.
run: web
	$(CARGO) run -p promptgate-server --bin promptgate -- --config config/demo.toml serve $(if $(PORT),--listen 127.0.0.1:$(PORT))

# Puts the `promptgate` binary into ~/.cargo/bin (on PATH after a rustup install).
install:
	$(CARGO) install --locked --path crates/promptgate-server --bin promptgate

# The web app served at `/`. Needs Node.js 20+ and npm; without them the gateway runs API-only and
# this says how to build the app later. Never fails because Node is missing.
web:
	@if command -v npm >/dev/null 2>&1; then \
	  (cd web && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; } && npm run build --silent) \
	  || echo "note: the web app did not build; the API still runs (see the errors above)"; \
	else \
	  echo "note: Node.js is not installed, so the web app at / is not built. Install Node.js 20+ and run"; \
	  echo "      'cd web && npm ci && npm run build' (or 'make web'), then restart; the API works without it."; \
	fi

test:
	scripts/with-postgres.sh $(CARGO) nextest run --workspace --no-fail-fast

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

openapi:
	$(CARGO) run -q -p promptgate-server --bin promptgate -- openapi > openapi.yaml
	cd web && npm run api-types

bench:
	$(CARGO) bench -p promptgate-core
	$(CARGO) bench -p promptgate-llm
	$(CARGO) bench -p promptgate-mcp
	$(CARGO) build --release -p promptgate-loadtest
	scripts/with-postgres.sh $(CARGO_TARGET_DIR_OR_DEFAULT)/release/promptgate-loadtest --gateway-workers 1
