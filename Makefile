# dcpi - continuous profiling and profile analysis for Linux/x86-64.
#
# Non-recursive: every part's sources are found by wildcard, so a new file in
# profile/, image/, collect/, cfg/, ... or in a part's subfolder (culprit/model/,
# culprit/sandbox/, estimate/calibrate/) joins libdcpi.a without editing this.
#
#   make            build build/dcpi and its dcpiXXX links
#   make check      install missing dependencies, build, run every test
#   make check-asan the unit tests under ASan + UBSan
#   make check-valgrind  the unit tests under valgrind's memcheck
#   make demo       profile a bundled workload and print dcpiprof
#   make bench      benchmarks that print figures beside the peer tools
#   make accuracy   estimates against callgrind's exact counts (DCPI figs. 8, 9)
#   make feedback   compiler feedback from dcpi vs PGO, AutoFDO, BOLT (bench/feedback)
#   make bpsim      the branch-predictor simulator, a valgrind tool (bench/culprits/bpsim)
#   make fuzz       run each fuzz target for FUZZ_SECONDS
#   make install    PREFIX=/usr/local DESTDIR=

PREFIX    ?= /usr/local
BUILD     ?= build
CC        ?= cc
CFLAGS    ?= -O2 -g
FUZZ_SECONDS ?= 60

# V=1 prints whole command lines
Q         := $(if $(V),,@)

WARN      := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
ifeq ($(CI),true)
WARN      += -Werror
endif

PKGS      := capstone libelf libcgraph libgvc liblzma libcurl
DEP_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEP_LIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -ldwarf -liberty -lz -lm
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -Iinclude $(WARN) $(DEP_CFLAGS) $(CFLAGS)

PARTS     := util profile image collect import cfg culprit estimate optimize report fleet
LIB_SRCS  := $(filter-out collect/pathrt.c collect/pathrt_io.c,$(foreach p,$(PARTS),$(wildcard $(p)/*.c $(p)/*/*.c)))
TOOL_SRCS := $(wildcard tools/*.c)
TEST_SRCS := $(wildcard tests/test_*.c)
WORKLOADS := $(patsubst tests/workloads/%.c,%,$(wildcard tests/workloads/*.c))
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)

LIB       := $(BUILD)/libdcpi.a
DCPI      := $(BUILD)/dcpi
PATHRT    := $(BUILD)/libdcpi-paths.so
TOOLS     := dcpid dcpiprof dcpicalc dcpicfg dcpilist dcpistats dcpidiff \
	     dcpivlist dcpivargs dcpivcg dcpivblks dcpimem
TESTS     := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
WL_BINS   := $(addprefix $(BUILD)/workloads/,$(WORKLOADS))
FUZZERS   := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all deps check check-asan check-valgrind demo bench accuracy feedback culprits bpsim fuzz \
	install clean
.DEFAULT_GOAL := all

# deps first: on a fresh machine a plain `make` installs the libraries too
all: $(DCPI) $(addprefix $(BUILD)/,$(TOOLS)) $(PATHRT) | deps

# --- dependencies ---------------------------------------------------------
# Probed with pkg-config and headers; apt-get only for what is missing, so a
# second run installs nothing.
deps:
	@./scripts/deps.sh

# --- the library and the binary -------------------------------------------
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(LIB): $(patsubst %.c,$(BUILD)/%.o,$(LIB_SRCS))
	@rm -f $@
	$(Q)ar rcs $@ $^

$(DCPI): $(patsubst %.c,$(BUILD)/%.o,$(TOOL_SRCS)) $(LIB)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(DEP_LIBS)

# The path-sample runtime preloaded into recorded commands (docs/paths.md):
# alone, position-independent, never sanitized (it runs inside any program).
$(PATHRT): collect/pathrt.c collect/pathrt_io.c collect/pathrt.h collect/loadea.h
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  SO      $@")
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE -O2 -fPIC -shared -fvisibility=hidden $(WARN) \
		-o $@ collect/pathrt.c collect/pathrt_io.c -ldl

# ... and carried inside dcpi (collect/paths_blob.c), so a copy of the binary alone has it.
$(BUILD)/collect/paths_blob.o: $(PATHRT)
$(BUILD)/collect/paths_blob.o: ALL_CFLAGS += -DPATHRT_FILE='"$(PATHRT)"'

$(addprefix $(BUILD)/,$(TOOLS)): $(DCPI)
	@ln -sf dcpi $@

# --- tests -----------------------------------------------------------------
$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -MF $@.d -o $@ $< $(TEST_OBJS) $(LIB) $(DEP_LIBS) -lcmocka

# test_bpsim drives bpsim's predictor (bench/culprits/bpsim) natively
BP_PRED_O := $(BUILD)/bench/culprits/bpsim/bp_pred.o
$(BUILD)/tests/test_bpsim: $(BP_PRED_O)
$(BUILD)/tests/test_bpsim: TEST_OBJS := $(BP_PRED_O)

# the simulated fleet's generator (bench/fleet_gen.c), run by test_fleet_sim
$(BUILD)/bench/fleet_gen: bench/fleet_gen.c $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB) $(DEP_LIBS)
$(BUILD)/tests/test_fleet_sim: $(BUILD)/bench/fleet_gen

$(BUILD)/workloads/%: tests/workloads/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=gnu11 -O2 -g -fno-omit-frame-pointer -fno-inline -o $@ $< -lm

# zround links zlib statically: its static procedures (longest_match,
# inflate_fast) keep their names in the workload's .symtab
$(BUILD)/workloads/zround: tests/workloads/zround.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=gnu11 -O2 -g -fno-omit-frame-pointer -o $@ $< -l:libz.a

check: deps
	@$(MAKE) --no-print-directory all-tests bpsim
	@BUILD=$(BUILD) ./tests/run.sh $(TESTS)

all-tests: all $(TESTS) $(WL_BINS)

check-asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		all-tests
	@BUILD=build-asan ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		./tests/run.sh $(patsubst $(BUILD)/%,build-asan/%,$(TESTS))

# memcheck over the test binaries (the dcpi they start runs natively)
check-valgrind: deps
	@$(MAKE) --no-print-directory all-tests
	@BUILD=$(BUILD) TEST_WRAPPER="valgrind -q --error-exitcode=9 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect" ./tests/run.sh $(TESTS)

# --- bpsim: the valgrind tool behind make culprits' mispredict yardstick ----
# (bench/culprits/bpsim, docs/culprits.md "Fig. 10").  Built outside valgrind's
# tree against the headers and static libraries of Debian's valgrind package
# (valgrind.pc), linked the way valgrind links its tools (static, no libc, at
# the tools' load address); $(BUILD)/bpsim/lib is a VALGRIND_LIB holding it
# beside links to the installed tools and preloads.  Without valgrind.pc,
# `make bpsim` says so and builds nothing; the rest of the tree never needs it.
BPSIM_DIR  := $(BUILD)/bpsim
BPSIM_TOOL := $(BPSIM_DIR)/lib/bpsim-amd64-linux
VG_LIBEXEC ?= /usr/libexec/valgrind
VG_INC     := $(shell pkg-config --variable=includedir valgrind 2>/dev/null)
VG_PLAT    := $(shell pkg-config --variable=platform valgrind 2>/dev/null)

ifeq ($(VG_PLAT)$(if $(wildcard $(VG_INC)/pub_tool_basics.h),yes),amd64-linuxyes)
VG_LIBDIR  := $(shell pkg-config --variable=libdir valgrind)/valgrind
VG_LOAD    := $(shell pkg-config --variable=valt_load_address valgrind)
BPSIM_CFLAGS := -std=gnu11 -O2 -g -m64 -I$(VG_INC) -DVGA_amd64=1 -DVGO_linux=1 \
	-DVGP_amd64_linux=1 -DVGPV_amd64_linux_vanilla=1 -fno-strict-aliasing -fno-builtin \
	-fno-stack-protector -fomit-frame-pointer -fno-pie $(WARN)

$(BPSIM_DIR)/%.o: bench/culprits/bpsim/%.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $< (valgrind tool)")
	$(Q)$(CC) $(BPSIM_CFLAGS) -MMD -MP -c -o $@ $<

$(BPSIM_TOOL): $(BPSIM_DIR)/bp_main.o $(BPSIM_DIR)/bp_pred.o
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) -m64 -o $@ $^ -static -no-pie -nodefaultlibs -nostartfiles -u _start \
		-Wl,--build-id=none -Wl,-Ttext-segment=$(VG_LOAD) \
		$(VG_LIBDIR)/libcoregrind-$(VG_PLAT).a $(VG_LIBDIR)/libvex-$(VG_PLAT).a -lgcc \
		$(VG_LIBDIR)/libgcc-sup-$(VG_PLAT).a
	$(Q)for f in $(VG_LIBEXEC)/*; do ln -sfn "$$f" $(BPSIM_DIR)/lib/; done

bpsim: $(BPSIM_TOOL)
else
bpsim:
	@echo "bpsim: no valgrind headers for amd64-linux (pkg-config valgrind): not built" >&2
endif

# --- demo, benchmarks, fuzzing ---------------------------------------------
demo: deps
	@$(MAKE) --no-print-directory all $(WL_BINS)
	@BUILD=$(BUILD) ./scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory all $(WL_BINS)
	@BUILD=$(BUILD) ./bench/run.sh

accuracy: deps
	@$(MAKE) --no-print-directory all $(WL_BINS) bpsim
	@BUILD=$(BUILD) ./bench/accuracy/run.sh

feedback: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) ./bench/feedback/run.sh

culprits: deps
	@$(MAKE) --no-print-directory all bpsim
	@BUILD=$(BUILD) ./bench/culprits/run.sh

$(BUILD)/fuzz/%: fuzz/%.c $(LIB_SRCS)
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -Iinclude $(DEP_CFLAGS) -g -O1 \
		-fsanitize=fuzzer,address,undefined -o $@ $< $(LIB_SRCS) $(DEP_LIBS)

fuzz: deps
	@$(MAKE) --no-print-directory $(FUZZERS)
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) ./fuzz/run.sh $(FUZZERS)

# --- install, clean --------------------------------------------------------
install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(DCPI) $(DESTDIR)$(PREFIX)/bin/dcpi
	for t in $(TOOLS); do ln -sf dcpi $(DESTDIR)$(PREFIX)/bin/$$t; done
	install -d $(DESTDIR)$(PREFIX)/lib/dcpi
	install -m 644 $(PATHRT) $(DESTDIR)$(PREFIX)/lib/dcpi/libdcpi-paths.so
	sh scripts/gen_man.sh $(DCPI) $(BUILD)/man
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
