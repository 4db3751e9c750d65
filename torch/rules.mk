# torch/: accdma as a torch.distributed backend (the accdma_torch package).
# Included by the top Makefile. Built only when Debian's torch is there
# (python3-torch, libtorch-dev, pybind11-dev) and not in sanitizer builds
# (the extension is loaded by an uninstrumented python3).
#   make torch          build build/torch/accdma_torch (the package, with _C)
#   make check          runs check-torch: the pytest suite (python3-pytest)

TORCH_PY   := /usr/bin/python3
TORCH_HAVE := $(shell test -f /usr/include/torch/csrc/distributed/c10d/ProcessGroup.hpp && \
                test -f /usr/include/pybind11/pybind11.h && \
                $(TORCH_PY) -c 'import torch' 2>/dev/null && echo 1)
TORCH_EXT  := $(shell $(TORCH_PY) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
TORCH_PYINC := $(shell $(TORCH_PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
TB         := $(B)/torch
TORCH_PKG  := $(TB)/accdma_torch
TORCH_SO   := $(TORCH_PKG)/_C$(TORCH_EXT)
TORCH_PYS  := $(patsubst torch/%,$(TB)/%,$(wildcard torch/accdma_torch/*.py))
TORCH_COBJS := $(patsubst torch/core/%.c,$(TB)/obj/core/%.o,$(wildcard torch/core/*.c))
TORCH_XOBJS := $(patsubst torch/csrc/%.cpp,$(TB)/obj/csrc/%.o,$(wildcard torch/csrc/*.cpp))
# -isystem: torch's own headers are not held to -Werror.
TORCH_CXXFLAGS := -std=c++17 -O2 -g -fPIC -pthread -Wall -Wextra -Werror -Wno-unused-parameter \
  -isystem /usr/include/torch/csrc/api/include -isystem $(TORCH_PYINC) -Iinclude \
  -DTORCH_EXTENSION_NAME=_C -DTORCH_API_INCLUDE_EXTENSION_H -D_GLIBCXX_USE_CXX11_ABI=1
TORCH_LIBS := -ltorch -ltorch_cpu -lc10 -ltorch_python -lnuma

.PHONY: torch check-torch
ifeq ($(TORCH_HAVE)$(SAN),1)
ALL_TARGETS += torch
CHECK_STEPS += check-torch
endif

torch: $(TORCH_SO) $(TORCH_PYS)

$(TB)/obj/core/%.o: torch/core/%.c torch/core/atc.h include/accdma.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -flto% -ffat-lto-objects,$(CFLAGS)) -c -o $@ $<

# Each of these takes ~30 s and ~1.7 GB: few of them, rebuilt only when they change.
$(TB)/obj/csrc/%.o: torch/csrc/%.cpp torch/csrc/pg.hpp torch/core/atc.h include/accdma.h
	@mkdir -p $(dir $@)
	$(CXX) $(TORCH_CXXFLAGS) -c -o $@ $<

$(TORCH_SO): $(TORCH_XOBJS) $(TORCH_COBJS) $(B)/libaccdma.a
	@mkdir -p $(dir $@)
	$(CXX) -shared -o $@ $(TORCH_XOBJS) $(TORCH_COBJS) $(B)/libaccdma.a -pthread $(TORCH_LIBS)

$(TB)/accdma_torch/%.py: torch/accdma_torch/%.py
	@mkdir -p $(dir $@)
	cp $< $@

check-torch: torch $(B)/accdma-run
	@cd torch/tests && timeout --kill-after=10 300 env PYTHONPATH=$(abspath $(TB)) \
	  ACCDMA_RUN=$(abspath $(B)/accdma-run) $(TORCH_PY) -m pytest -q -p no:cacheprovider .

# tests/test_torch_core.c builds the C core in (no torch needed), so every
# build, sanitizers too, tests it: rebuild it when the core changes.
$(B)/tests/test_torch_core: $(wildcard torch/core/*.c torch/core/*.h)
