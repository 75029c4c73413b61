#!/usr/bin/env bash
# check-layers.sh [--graph] [ROOT] -- the layer check of doc/DESIGN.md.
#
# Reads every `#include "..."` line of the .c, .h, .cu and .cuh files under
# ROOT/lib, kernels, drivers and tools (ROOT: the repository by default),
# resolves each include string as the compiler does (the including file's
# own folder first, then the -I folders in the order of the Makefile's
# `override CFLAGS +=` line, or of its `NVCCFLAGS +=` line for .cu/.cuh
# files), and fails, naming the files, on
#   (a) any cycle between folders (folder A includes a file of B, and B, maybe
#       through other folders, one of A), and
#   (b) any include from a folder into one that its #LAYER line in the
#       Makefile does not allow (directly or through the folders it names),
#       i.e. from a lower layer into a higher one,
# and on a folder with no #LAYER line or an include string that resolves to
# no file.  Prints one summary line on success; --graph also prints the
# folder graph (one line per folder: the folders its files include).
# Exit 0: clean; 1: violations found; 2: usage or a malformed Makefile.
set -u
graph=0
if [ "${1:-}" = --graph ]; then graph=1; shift; fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[ -f "$root/Makefile" ] || { echo "check-layers: no Makefile in $root" >&2; exit 2; }
exec python3 - "$root" "$graph" <<'EOF'
import os, re, sys

root, show_graph = sys.argv[1], sys.argv[2] == "1"
mk = open(os.path.join(root, "Makefile")).read().splitlines()

def die(msg):
    print("check-layers: " + msg, file=sys.stderr)
    sys.exit(2)

# The #LAYER table: "#LAYER folder: dep dep ..."
deps = {}
for n, line in enumerate(mk, 1):
    m = re.match(r"#LAYER\s+(\S+):\s*(.*)$", line)
    if m:
        if m.group(1) in deps:
            die("Makefile:%d: a second #LAYER line for %s" % (n, m.group(1)))
        deps[m.group(1)] = m.group(2).split()
if not deps:
    die("Makefile: no #LAYER lines")
for f, ds in deps.items():
    for d in ds:
        if d not in deps:
            die("Makefile: #LAYER %s names %s, which has no #LAYER line" % (f, d))

# What each folder may include: the closure of its #LAYER line.
def closure(f, seen=None):
    out, stack = set(), list(deps[f])
    while stack:
        d = stack.pop()
        if d not in out:
            out.add(d)
            stack.extend(deps[d])
    return out
allowed = {f: closure(f) for f in deps}

def iflags(prefix):
    for line in mk:
        if line.startswith(prefix) and "-I" in line:
            return [w[2:] for w in line.split() if w.startswith("-I") and not w[2:].startswith(("/", "$"))]
    die("Makefile: no '%s' line with -I flags" % prefix)
c_dirs, cu_dirs = iflags("override CFLAGS +="), iflags("NVCCFLAGS +=")

inc_re = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
errors, edges = [], {}   # edges[(A, B)] = first "file:line" where A includes B
nfiles = nincl = 0
for top in ("lib", "kernels", "drivers", "tools"):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith((".c", ".h", ".cu", ".cuh")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            folder = os.path.dirname(rel)
            nfiles += 1
            if folder not in deps:
                errors.append("%s: folder %s has no #LAYER line in the Makefile" % (rel, folder))
                continue
            search = [folder] + (cu_dirs if name.endswith((".cu", ".cuh")) else c_dirs)
            for n, line in enumerate(open(path, errors="replace"), 1):
                m = inc_re.match(line)
                if not m:
                    continue
                nincl += 1
                s = m.group(1)
                target = next((os.path.normpath(os.path.join(d, s)) for d in search
                               if os.path.isfile(os.path.join(root, d, s))), None)
                if target is None:
                    errors.append('%s:%d: #include "%s" resolves to no file (searched %s)' % (rel, n, s, " ".join(search)))
                    continue
                tf = os.path.dirname(target)
                if tf == folder:
                    continue
                edges.setdefault((folder, tf), "%s:%d" % (rel, n))
                if tf not in deps:
                    errors.append('%s:%d: #include "%s" is %s, outside every layer' % (rel, n, s, target))
                elif tf not in allowed[folder]:
                    errors.append('%s:%d: #include "%s" (%s): %s may not include %s (a higher layer; %s may include: %s)'
                                  % (rel, n, s, target, folder, tf, folder, " ".join(sorted(allowed[folder])) or "nothing"))

# Cycles between folders: strongly connected components of the include graph (Tarjan).
succ = {}
for (a, b) in edges:
    succ.setdefault(a, []).append(b)
index, low, onstack, stack, sccs = {}, {}, set(), [], []
def strong(v):
    index[v] = low[v] = len(index)
    stack.append(v); onstack.add(v)
    for w in succ.get(v, []):
        if w not in index:
            strong(w); low[v] = min(low[v], low[w])
        elif w in onstack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); onstack.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(sorted(comp))
sys.setrecursionlimit(10000)
for v in sorted(set(a for a, _ in edges) | set(b for _, b in edges)):
    if v not in index:
        strong(v)
for comp in sccs:
    inside = sorted((a, b) for (a, b) in edges if a in comp and b in comp)
    errors.append("cycle between folders %s: %s" % (", ".join(comp),
                  "; ".join("%s -> %s (%s)" % (a, b, edges[(a, b)]) for a, b in inside)))

if show_graph:
    for f in sorted(deps, key=lambda f: (len(allowed[f]), f)):
        print("%-18s -> %s" % (f, " ".join(sorted(b for (a, b) in edges if a == f)) or "(nothing)"))
for e in errors:
    print("check-layers: " + e)
if errors:
    print("check-layers: FAILED: %d problem(s) (%d cycle(s)) in %d files, %d includes" % (len(errors), len(sccs), nfiles, nincl))
    sys.exit(1)
print("check-layers: %d files, %d includes, %d folder edges: no cycle, no include into a higher layer"
      % (nfiles, nincl, len(edges)))
EOF
