#!/usr/bin/env bats
# test/check-layers.sh (the layer check of make test): clean on the tree as
# it is, and failing, with the files named, on a copy of the tree with an
# injected cycle between folders, an include into a higher layer, a folder
# without a #LAYER line and an include string that finds no file.

setup() {
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  command -v python3 >/dev/null || skip "python3 not installed"
}

# a copy of the source folders and the Makefile (the check reads nothing else)
copy_tree() {
  mkdir -p "$T/tree"
  cp -r "$ROOT/Makefile" "$ROOT/lib" "$ROOT/kernels" "$ROOT/drivers" "$ROOT/tools" "$T/tree/"
}

@test "check-layers: the tree has no folder cycle and no include into a higher layer" {
  run "$ROOT/test/check-layers.sh" --graph "$ROOT"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"no cycle, no include into a higher layer"* ]]
  # the layers as DESIGN.md states them: lib includes no kernels or drivers header,
  # kernels none of drivers, and no lib folder the backends' registry
  [[ "$(grep '^lib/' <<<"$output")" != *"kernels"* ]] && [[ "$(grep '^lib/' <<<"$output")" != *"drivers"* ]]
  [[ "$(grep '^kernels' <<<"$output")" != *"drivers"* ]]
  [[ "$(grep -E '^kernels(/cpu|/cuda|/opencl)? ' <<<"$output")" != *"registry"* ]]
}

@test "check-layers: an injected cycle (lib/base -> drivers/train -> lib/base) fails, naming the files" {
  copy_tree
  # base/dd.h includes the communicator, which includes base/dd.h
  sed -i 's|^#include <stddef.h>$|#include <stddef.h>\n#include "train/comm.h"|' "$T/tree/lib/base/dd.h"
  grep -q '"train/comm.h"' "$T/tree/lib/base/dd.h"
  run "$ROOT/test/check-layers.sh" "$T/tree"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"cycle between folders"*"drivers/train"*"lib/base"* ]]
  [[ "$output" == *"lib/base/dd.h:"*'#include "train/comm.h"'*"lib/base may not include drivers/train"* ]]
  [[ "$output" == *"FAILED"* ]]
}

@test "check-layers: a cycle inside kernels (backend.c <-> cpu) fails" {
  copy_tree
  echo '#include "cpu/cpu-dd.h"' >> "$T/tree/kernels/backend.c"
  run "$ROOT/test/check-layers.sh" "$T/tree"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"cycle between folders kernels, kernels/cpu: kernels -> kernels/cpu (kernels/backend.c:"* ]]
}

@test "check-layers: an include into a higher layer without a cycle fails" {
  copy_tree
  # a backend reaching for the registry above it
  sed -i '0,/^#include "backend.h"$/s||#include "backend.h"\n#include "registry/registry.h"|' "$T/tree/kernels/cpu/cpu.c"
  run "$ROOT/test/check-layers.sh" "$T/tree"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"kernels/cpu/cpu.c:"*"kernels/cpu may not include kernels/registry"* ]]
  [[ "$output" != *"cycle between"* ]]
}

@test "check-layers: a folder without a #LAYER line, an include that finds no file" {
  copy_tree
  mkdir -p "$T/tree/drivers/phones"
  printf '#include "gmm/gmm.h"\n' > "$T/tree/drivers/phones/tree.c"
  printf '#include "gmm/no-such-header.h"\n' >> "$T/tree/lib/gmm/accs.c"
  run "$ROOT/test/check-layers.sh" "$T/tree"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"drivers/phones/tree.c: folder drivers/phones has no #LAYER line"* ]]
  [[ "$output" == *'lib/gmm/accs.c:'*'"gmm/no-such-header.h" resolves to no file'* ]]
}
