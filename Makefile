# scaletune — set-up and everyday commands. See README.md.

# Debian packages the project needs (LLVM 19 for code generation, llvm-mca-19
# and llvm-objdump-19 for estimated cycles, cross toolchains and QEMU user mode
# for running AArch64 / RISC-V kernels; the QEMU runner's TCG plugin is built
# on first use with the system C compiler, else clang-19; DejaVu Sans is the
# font of the report's charts, Chromium renders the report in its tests).
APT_PACKAGES := llvm-19-dev llvm-19 lld-19 clang-19 qemu-user \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
	gcc-riscv64-linux-gnu libc6-dev-riscv64-cross \
	libopenblas-dev protobuf-compiler zlib1g-dev libzstd-dev libpolly-19-dev \
	fonts-dejavu-core chromium

CARGO ?= cargo
SCALETUNE := target/release/scaletune
DEMO_DIR := out/demo

.PHONY: deps build test lint demo bench fuzz clean

## deps: install whichever required Debian packages are missing (quiet when all are present)
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -ne 0 ] && SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

## build: release build of the scaletune binary
build: deps
	$(CARGO) build --release -p scaletune

## test: the whole test suite
test: deps
	$(CARGO) test --workspace

## lint: formatting and clippy, warnings are errors
lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## demo: compile and check a tiled matmul on this machine and a predicated
## scale_add at four SVE vector lengths under QEMU, sample and check schedules,
## time a parallel matmul, measure emulated instruction counts at three VLs,
## run a short tuning job natively and under QEMU into $(DEMO_DIR)/scaletune.db,
## replay its best kernels with `scaletune build` into $(DEMO_DIR)/kernels;
## writes $(DEMO_DIR)/report.md and the HTML report $(DEMO_DIR)/report/index.html
demo: build
	@sh scripts/demo.sh $(SCALETUNE) $(DEMO_DIR)

## bench: tuned kernels against OpenBLAS, clang -O3 auto-vectorization and the
## measured FMA peak (host, one thread) and, under QEMU, against clang's SVE
## loops on neoverse-v1 at VL 128/256/512; tables on stdout, figures in
## $(BENCH_DIR)/bench.json, tuning database $(BENCH_DIR)/scaletune.db (reused)
BENCH_DIR := out/bench
bench: build
	$(SCALETUNE) bench --out $(BENCH_DIR)

## fuzz: every fuzz target (workload files and references, traces, loop-nest
## text, target files, agent requests) for FUZZ_SECS seconds each (default
## 600), on the stable toolchain; `cargo test` runs them for a few cases only
FUZZ_SECS ?= 600
fuzz:
	FUZZ_SECS=$(FUZZ_SECS) $(CARGO) test -p scaletune-space --test fuzz -- --test-threads 1 --nocapture fuzz_
	FUZZ_SECS=$(FUZZ_SECS) $(CARGO) test -p scaletune-codegen --test fuzz -- --test-threads 1 --nocapture fuzz_
	FUZZ_SECS=$(FUZZ_SECS) $(CARGO) test -p scaletune-measure --test fuzz_agent_request -- --test-threads 1 --nocapture fuzz_

clean:
	$(CARGO) clean
	rm -rf out
