# loom -- build, test, demo.  `make` builds build/loom, build/libloom.a and build/libloom.so;
# `make test` runs the whole suite; `make demo` tunes a real workload.
# Missing Debian packages are installed by scripts/install-deps.sh first.

CC      ?= cc
CXX     ?= g++
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE
LIBS    := -lxgboost -lgsl -lgslcblas -lcjson -ldl -lm -lpthread
B       := build

# every folder of the library, top-level and role sub-folders (dsl/front, search/tune, ...)
LIB_DIRS := $(sort $(shell find dsl traces runtime modules costmodel search ship -type d))
LIB_SRC  := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/kernel_abi_text.o $(B)/obj/gen/calibrate_bench_text.o
CLI_SRC  := $(wildcard cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/obj/%.o)
TEST_SRC := $(wildcard tests/*.c) $(wildcard tests/fuzz/fuzz_*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/obj/%.o)

.PHONY: all deps test demo bench clean check-asan check-property install fuzz fuzz-build fuzzers

all: deps $(B)/loom $(B)/libloom.a $(B)/libloom.so

deps: $(B)/.deps-ok
$(B)/.deps-ok: scripts/install-deps.sh
	@mkdir -p $(B)
	@bash scripts/install-deps.sh
	@touch $@

# -fPIC: libloom.a links into user module libraries (docs/modules.md)
$(B)/obj/%.o: %.c | $(B)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -fPIC -MMD -MP -c $< -o $@

# Generated C files inline the kernel ABI header; keep one source of truth.
$(B)/gen/kernel_abi_text.c: runtime/lower/kernel_abi.h
	@mkdir -p $(dir $@)
	@{ echo '/* generated from runtime/lower/kernel_abi.h by the Makefile */'; \
	  echo 'const char loom_kernel_abi_text[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@

# The host microbenchmarks (runtime/target/calibrate.h), compiled at run time.
$(B)/gen/calibrate_bench_text.c: runtime/target/calibrate_bench.inc
	@mkdir -p $(dir $@)
	@{ echo '/* generated from runtime/target/calibrate_bench.inc by the Makefile */'; \
	  echo 'const char loom_calibrate_bench_text[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@

$(B)/obj/gen/%.o: $(B)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -fPIC -c $< -o $@

$(B)/libloom.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# the same objects as a shared library (issue 17: C programs, the Python
# package python/loom, pkg-config); its dependencies are recorded in it
$(B)/libloom.so: $(LIB_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libloom.so -o $@ $^ $(LIBS)

# -rdynamic: modules loaded with --module resolve loom's symbols in the binary
$(B)/loom: $(CLI_OBJ) $(B)/libloom.a
	$(CC) $(CFLAGS) -rdynamic -o $@ $(CLI_OBJ) $(B)/libloom.a $(LIBS)

# build/loom-mpi (cli/mpi/, docs/distributed.md): loom tune with measurement workers on MPI, built
# with mpicc only when Open MPI is installed (`make mpi` installs it), so that libloom and
# build/loom never link MPI.
MPICC    ?= mpicc
MPI_SRC  := $(wildcard cli/mpi/*.c)
MPI_OBJ  := $(MPI_SRC:%.c=$(B)/obj/%.o)
$(B)/obj/cli/mpi/%.o: cli/mpi/%.c | $(B)/.deps-ok
	@mkdir -p $(dir $@)
	$(MPICC) $(WARN) $(CFLAGS) -MMD -MP -c $< -o $@
$(B)/loom-mpi: $(MPI_OBJ) $(filter-out $(B)/obj/cli/main.o,$(CLI_OBJ)) $(B)/libloom.a
	$(MPICC) $(CFLAGS) -rdynamic -o $@ $^ $(LIBS)
.PHONY: mpi mpi-optional
mpi: all
	@bash scripts/install-deps.sh --mpi
	$(MAKE) $(B)/loom-mpi
# `make test`: Open MPI installed when running as root (CI: a fresh Debian machine), loom-mpi
# built when mpicc is there; without it the MPI tests (tests/test_mpi.c) skip
mpi-optional: all
	@if [ "$$(id -u)" = 0 ]; then bash scripts/install-deps.sh --mpi || echo "make: Open MPI could not be installed"; fi
	@if command -v $(MPICC) >/dev/null; then $(MAKE) $(B)/loom-mpi; \
	  else echo "make: no $(MPICC): the MPI tests will skip (make mpi installs Open MPI)"; fi

$(B)/loom_tests: $(TEST_OBJ) $(B)/libloom.a
	$(CC) $(CFLAGS) -o $@ $(TEST_OBJ) $(B)/libloom.a -lcriterion $(LIBS)

# The whole suite (Criterion; each test in its own process).
# The property suite (tests/test_property.c) samples PROPERTY_SAMPLES traces
# of the generic program per workload here (its own default, 2000, is what
# `make check-property` runs): at 2000 it built and ran ~12,600 kernels,
# half of a clean-clone CI run's 15 minutes.  At 1000 (and the design
# spaces' 400, SPACE_SAMPLES) the CI ran 918 s, over its 900 s budget:
# the two property suites were 620 of make test's 1271 test-seconds, so
# make test sampled 700 and 300; at 700 the CI ran 854 s, and the two
# property suites built and ran kernels for 474 test-seconds on a cold kernel
# cache (10 min 51 s wall here), so make test sampled 550 and 300; the
# clean-clone CI then crept to 14:39-15:43 (2026-12-04, Zen 5), so it
# sampled 480; at 480 and 300 it ran 14:51-15:02 with the new tests of the
# fifty-fourth session, so it samples 400 and 250 (`make check-property`
# keeps 2000 and 400).
PROPERTY_SAMPLES ?= 400
SPACE_SAMPLES ?= 250
# The tuneguard suite loads the machine on purpose and then judges what its
# campaigns crowned by re-measuring: it runs alone, after the rest, so no
# other test's load decides it (a CI run of 2026-11-30 failed it beside
# other tests: a parallel schedule's every round stalled).  Both runs go
# ahead; either failing fails the target.
TEST_ENV = LOOM_MPI_BIN=$(CURDIR)/$(B)/loom-mpi LOOM_PROPERTY_SAMPLES=$(PROPERTY_SAMPLES) LOOM_SPACE_SAMPLES=$(SPACE_SAMPLES) LOOM_CACHE=$(CURDIR)/$(B)/cache LOOM_CALIBRATE=quick LOOM_BIN=$(CURDIR)/$(B)/loom
# scripts/run-tests.sh runs the two and lists every failure again at the end
# (the full output in build/test.log).
test: all $(B)/loom_tests mpi-optional
	$(TEST_ENV) bash scripts/run-tests.sh ./$(B)/loom_tests $(B)/test.log

# The property test in full with the vectorizer on: `make test` compiles and
# runs every distinct valid schedule of PROPERTY_SAMPLES traces a workload
# at -O0 for speed; this samples 2000 a workload (~12,600 kernels) and runs
# them all at -O1 -ftree-vectorize (slower to compile).
check-property: all $(B)/loom_tests
	LOOM_PROPERTY_MAX_RUN=0 LOOM_PROPERTY_CFLAGS="-O1 -ftree-vectorize -march=native -ffp-contract=fast -fopenmp -fPIC -shared -std=c11" \
	  LOOM_CACHE=$(CURDIR)/$(B)/cache LOOM_CALIBRATE=quick ./$(B)/loom_tests --filter '@(property|property_space)/*' --jobs 2

# The main job, end to end on the real Cora graph.
demo: all
	LOOM_CACHE=$(CURDIR)/$(B)/cache bash scripts/demo.sh

bench: all
	@bash scripts/install-deps.sh --bench
	$(MAKE) -C bench
	LOOM_CACHE=$(CURDIR)/$(B)/cache bash bench/run.sh

# The suite under AddressSanitizer + UBSan (a separate build tree).
check-asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	  $(MAKE) B=build-asan OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer" test

# Fuzzing (docs/fuzzing.md): a libFuzzer harness per input format,
# tests/fuzz/fuzz_<format>.c, built with clang against the library built with
# clang and ASan+UBSan in build-fuzz/, each run FUZZ_SECONDS seconds on its
# seed corpus tests/fuzz/corpus/<format>/ (new inputs go to
# build-fuzz/corpus/<format>/, crashes to build-fuzz/crashes/).
FUZZ_SECONDS ?= 20
FUZZ_FORMATS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
fuzz-build:
	@bash scripts/install-deps.sh --fuzz
	$(MAKE) B=build-fuzz CC=clang OPT="-O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link" fuzzers
fuzz: fuzz-build
	bash scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_FORMATS)
fuzzers: $(addprefix $(B)/fuzz_,$(FUZZ_FORMATS))
$(B)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(B)/libloom.a
	$(CC) $(WARN) $(CFLAGS) -fsanitize=fuzzer -DLOOM_FUZZ_MAIN -o $@ $< $(B)/libloom.a $(LIBS)

# `make install PREFIX=DIR`: bin/loom, lib/libloom.a, lib/libloom.so, the
# public headers (every header of the library but *_internal.h and *_impl.h)
# under include/loom/ keeping their folders (include them as
# <modules/module.h>, <search/tune/tune.h>, <ship/ship.h>) and lib/pkgconfig/loom.pc
# (`pkg-config --cflags --libs loom` links libloom.so with an rpath;
# --static adds its dependencies) (docs/modules.md, docs/shipping.md).
PREFIX ?= /usr/local
INSTALL_HDRS := $(filter-out %_internal.h %_impl.h,$(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.h)))
install: all
	@mkdir -p $(PREFIX)/bin $(PREFIX)/lib/pkgconfig $(addprefix $(PREFIX)/include/loom/,$(LIB_DIRS))
	install -m 755 $(B)/loom $(PREFIX)/bin/loom
	if [ -x $(B)/loom-mpi ]; then install -m 755 $(B)/loom-mpi $(PREFIX)/bin/loom-mpi; fi
	install -m 644 $(B)/libloom.a $(PREFIX)/lib/libloom.a
	install -m 755 $(B)/libloom.so $(PREFIX)/lib/libloom.so
	for h in $(INSTALL_HDRS); do install -m 644 $$h $(PREFIX)/include/loom/$$h || exit 1; done
	@{ echo 'prefix=$(abspath $(PREFIX))'; echo 'libdir=$${prefix}/lib'; echo 'includedir=$${prefix}/include/loom'; \
	  echo; echo 'Name: loom'; echo 'Description: sparse and attention tensor program tuner (schedules, traces, modules, campaigns)'; \
	  echo 'Version: 0.1.0'; echo 'Cflags: -I$${includedir}'; \
	  echo 'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lloom'; echo 'Libs.private: $(LIBS)'; } > $(PREFIX)/lib/pkgconfig/loom.pc
	@echo "installed loom in $(PREFIX) (pkg-config: PKG_CONFIG_PATH=$(abspath $(PREFIX))/lib/pkgconfig)"

clean:
	rm -rf $(B) build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(MPI_OBJ:.o=.d)
