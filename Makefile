# Thin wrapper over meson. `make demo` and `make test` work on a fresh Debian 12 machine.
BUILD ?= build
ASAN_BUILD ?= build-asan
DB ?= orders.db

# ccache (installed by scripts/install-deps; meson uses it when present) finds what an earlier
# build compiled, in any clone of the repository on this machine: paths under the clone are
# hashed relative to it, and the build directory's name is left out of the hash.
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= true

.PHONY: deps build demo test test-asan bench peers-deps torture fuzz format clean

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# Builds only the example, the `sluice` command it points to and the library, none of the tests.
demo: deps $(BUILD)/build.ninja
	ninja -C $(BUILD) examples/orders/orders cli/sluice
	rm -f $(DB) $(DB)-wal $(DB)-shm
	$(BUILD)/examples/orders/orders $(DB)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false

test-asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C $(ASAN_BUILD) --print-errorlogs --timeout-multiplier 3
	scripts/torture --build $(ASAN_BUILD)

test: build
	meson test -C $(BUILD) --print-errorlogs
	$(BUILD)/bench/sluice-bench --quick
	$(MAKE) torture
	$(MAKE) test-asan

# The torture suite's short run (issue 4); `scripts/torture --long` runs the full counts.
torture: build
	scripts/torture --build $(BUILD)

# Every fuzz target of tests/fuzz under libFuzzer (clang, in build-fuzz) for FUZZ_SECONDS each;
# `make test` runs them only for a fixed number of mutations (docs/fuzzing.md).
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 1
fuzz: deps
	scripts/fuzz --seconds $(FUZZ_SECONDS) --jobs $(FUZZ_JOBS)

# The relay bench runs too when it was built (libnats and nats-server found), and the side-by-side
# bench with plainjob and BullMQ (on a redis-server it starts) when Node.js is present
# (bench/peers/install: npm ci, building better-sqlite3 from source against the installed Node's
# headers), each also after a miss.
bench: build
	status=0; $(BUILD)/bench/sluice-bench || status=$$?; \
	if [ -x $(BUILD)/bench/sluice-relay-bench ]; then \
	  $(BUILD)/bench/sluice-relay-bench || status=$$?; fi; \
	if command -v node >/dev/null 2>&1; then \
	  bench/peers/install && $(BUILD)/bench/sluice-peers-bench || status=$$?; fi; \
	exit $$status

# plainjob, BullMQ and better-sqlite3 for the side-by-side bench, as bench/peers/package-lock.json
# pins them.
peers-deps:
	bench/peers/install

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
