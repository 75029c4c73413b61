#!/usr/bin/env bats
# make install: tools, the three static archives (drivers, kernels, lib),
# public headers (each one compiles on its own from the installed tree),
# gmmhmm.pc (no path of the build machine in it), the recipes' job launchers,
# man pages, the Python package (share/gmmhmm/python); a small C program built against the installed tree with
# pkg-config computes the per-frame log-likelihoods of a tiny GMM set through
# the kernels' backend and checks them against the closed form (|diff| <=
# 1e-4 nats, float kernels), and sums them over one rank through the drivers'
# communicator (double-double, lib/base).

setup() {
  ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  T=${BATS_TEST_TMPDIR:-$(mktemp -d)}
  command -v pkg-config >/dev/null || skip "pkg-config not installed (tools/install-deps.sh)"
  # make test-asan: the sanitized build is not the one make install installs
  [ -z "${GH_SANITIZED:-}" ] || skip "sanitized build"
}

install_tree() {
  # the same build (B=, BIN=) as the suite's tools; NVCC as the build was made
  make -s -C "$ROOT" install PREFIX="$T/prefix" > "$T/install.log" 2>&1 || { cat "$T/install.log"; return 1; }
}

@test "make install PREFIX: tools, libraries, headers, gmmhmm.pc, man pages" {
  install_tree
  P=$T/prefix
  [ -x "$P/bin/gmm-init" ] && [ -x "$P/bin/hmm-viterbi" ]
  [ -f "$P/lib/libgmmhmm.a" ] && [ -f "$P/lib/libgmmhmm-kernels.a" ] && [ -f "$P/lib/libgmmhmm-drivers.a" ]
  [ -f "$P/include/gmmhmm/backend.h" ] && [ -f "$P/include/gmmhmm/registry/registry.h" ]
  [ -f "$P/include/gmmhmm/gmm/gmm.h" ] && [ -f "$P/include/gmmhmm/io/table.h" ]
  [ -f "$P/include/gmmhmm/train/gmm-data.h" ] && [ -f "$P/include/gmmhmm/gmm/gselect.h" ]
  # the Python package, its prefix written in, and the pip line printed
  [ -f "$P/share/gmmhmm/python/pyproject.toml" ] && [ -f "$P/share/gmmhmm/python/gmmhmm/mixture.py" ]
  grep -q "^PREFIX = \"$P\"" "$P/share/gmmhmm/python/gmmhmm/_prefix.py"
  grep -q "pip install $P/share/gmmhmm/python" "$T/install.log"
  # every public header of the source tree is installed (lib/*/*.h, drivers/*/*.h,
  # backend.h, registry.h), and none refers outside the tree
  n_src=$(ls "$ROOT"/lib/*/*.h "$ROOT"/drivers/*/*.h | wc -l)
  [ "$(find "$P/include/gmmhmm" -name '*.h' | wc -l)" -eq $((n_src + 2)) ]
  ! grep -rn '#include "\.\./' "$P/include/gmmhmm"
  # each installed header compiles on its own with pkg-config's flags
  export PKG_CONFIG_PATH=$P/lib/pkgconfig
  cflags=$(pkg-config --cflags gmmhmm)
  for h in $(cd "$P/include/gmmhmm" && find . -name '*.h' | sed 's|^\./||'); do
    printf '#include "%s"\nint main(void) { return 0; }\n' "$h" > "$T/h.c"
    cc -std=c11 -Wall -Werror -fsyntax-only $cflags "$T/h.c" || { echo "header $h does not compile alone"; return 1; }
  done
  # man pages from --help (help2man)
  if command -v help2man >/dev/null; then
    [ "$(ls "$P/share/man/man1/"*.1 | wc -l)" -eq "$(ls "$ROOT"/tools/*.c | wc -l)" ]
    grep -q '^\.SH SYNOPSIS' "$P/share/man/man1/gmm-init.1"
    grep -q '^gmm-init \\- Initialise a GMM set from features$' "$P/share/man/man1/gmm-init.1"
    grep -q 'feats-rspecifier> <model-out>' "$P/share/man/man1/gmm-init.1"
  fi
  [ "$(pkg-config --modversion gmmhmm)" != "" ]
  pkg-config --static --libs gmmhmm | grep -q -- '-lfftw3'
  # the archives in link order, no link group
  pkg-config --libs gmmhmm | grep -q -- '-lgmmhmm-drivers -lgmmhmm-kernels -lgmmhmm\( \|$\)'
  ! grep -q -- '--start-group' "$P/lib/pkgconfig/gmmhmm.pc"
}

@test "gmmhmm.pc names no path of the build machine" {
  install_tree
  pc=$T/prefix/lib/pkgconfig/gmmhmm.pc
  cat "$pc"
  # libdir and includedir follow prefix
  grep -qx 'libdir=${prefix}/lib' "$pc" && grep -qx 'includedir=${prefix}/include' "$pc"
  # Libs, Libs.private: -l names, -L${libdir}..., -fopenmp, -Wl flags; nothing else (no
  # absolute path such as CUDA's lib64 or the OpenCL loader's .so)
  bad=$(sed -n 's/^Libs\(\.private\)\{0,1\}: //p' "$pc" | tr ' ' '\n' |
        grep -v -e '^$' -e '^-l[A-Za-z0-9_+.-]*$' -e '^-L\${libdir}' -e '^-fopenmp$' -e '^-Wl,' || true)
  [ -z "$bad" ] || { echo "build-machine paths in gmmhmm.pc: $bad"; return 1; }
  ! grep -q -e "$ROOT" -e '/usr/' -e '/opt/' "$pc"
}

@test "make install: the recipes' job launchers run from share/gmmhmm/utils" {
  install_tree
  U=$T/prefix/share/gmmhmm/utils
  for f in run.pl slurm.pl queue.pl run.sh slurm.sh; do [ -x "$U/$f" ] || { echo "$f missing"; return 1; }; done
  [ -f "$U/launcher_args.sh" ]
  # run.pl (a wrapper of its sibling run.sh) from another directory: two jobs, their logs
  cd "$T"
  run "$U/run.pl" JOB=1:2 "$T/log/job.JOB.log" echo hello JOB
  echo "$output"
  [ "$status" -eq 0 ]
  grep -qx 'hello 1' "$T/log/job.1.log" && grep -qx 'hello 2' "$T/log/job.2.log"
  grep -q '^# Ended (code 0)' "$T/log/job.2.log"
  # a failing job: non-zero exit, its log named
  run "$U/run.pl" "$T/log/bad.log" false
  [ "$status" -ne 0 ]
  [[ "$output" == *"bad.log"* ]]
}

@test "a C program against the installed tree (pkg-config --static): log-likelihoods of a tiny GMM set" {
  install_tree
  export PKG_CONFIG_PATH=$T/prefix/lib/pkgconfig
  cat > "$T/ll.c" <<'EOF'
/* Two pdfs in 2 dimensions: pdf 0 = 0.3 N(mu0, diag v0) + 0.7 N(mu1, diag v1),
 * pdf 1 = one Gaussian.  Per-frame per-pdf log-likelihoods through the
 * backend (cpu-ref and cpu) against the closed form in double. */
#include <math.h>
#include <stdio.h>
#include "registry/registry.h"
#include "gmm/gmm.h"
#include "base/gh-base.h"
#include "train/comm.h"

static double lognorm(const double *x, const double *mu, const double *var) {
  double s = 0;
  for (int d = 0; d < 2; ++d) s += -0.5 * log(2 * M_PI * var[d]) - 0.5 * (x[d] - mu[d]) * (x[d] - mu[d]) / var[d];
  return s;
}

int main(int argc, char **argv) {
  gh_init(argv[0]);
  const double w0[2] = {0.3, 0.7}, mu0[4] = {0, 0, 3, -1}, v0[4] = {1, 2, 0.5, 1.5};
  const double w1[1] = {1}, mu1[2] = {-2, 4}, v1[2] = {4, 0.25};
  gh_gmm_set s = {0};
  s.dim = 2; s.num_pdfs = 2; s.pdfs = (gh_gmm[2]){{0}};
  gh_gmm_init(&s.pdfs[0], GH_COV_DIAG, 2, 2);
  gh_gmm_init(&s.pdfs[1], GH_COV_DIAG, 1, 2);
  if (gh_gmm_set_moments(&s.pdfs[0], w0, mu0, v0) || gh_gmm_set_moments(&s.pdfs[1], w1, mu1, v1)) return 2;
  const float X[3 * 2] = {0.5f, -0.2f, 2.5f, -1.0f, -1.0f, 3.0f};
  double worst = 0;
  const char *devs[2] = {"cpu-ref", "cpu"};
  for (int k = 0; k < 2; ++k) {
    gh_backend *b = gh_backend_create(devs[k]);
    gh_dev_model *m = b->ops->gmm->model_upload(b, &s);
    float out[3 * 2];
    b->ops->gmm->loglikes(b, m, X, 3, out);
    for (int t = 0; t < 3; ++t) {
      double x[2] = {X[2 * t], X[2 * t + 1]};
      double a = log(w0[0]) + lognorm(x, mu0, v0), c = log(w0[1]) + lognorm(x, mu0 + 2, v0 + 2);
      double mx = a > c ? a : c, ref0 = mx + log(exp(a - mx) + exp(c - mx)), ref1 = lognorm(x, mu1, v1);
      double e0 = fabs(out[2 * t] - ref0), e1 = fabs(out[2 * t + 1] - ref1);
      if (e0 > worst) worst = e0;
      if (e1 > worst) worst = e1;
      printf("%s frame %d: %.6f %.6f (closed form %.6f %.6f)\n", devs[k], t, out[2 * t], out[2 * t + 1], ref0, ref1);
    }
    b->ops->gmm->model_free(b, m);
    gh_backend_free(b);
  }
  printf("worst abs diff %.3g\n", worst);
  /* the drivers' archive: the sum of the worst differences over this one rank */
  gh_comm *c = gh_comm_init(&argc, &argv, "none");
  gh_dd_acc acc;
  gh_dd_acc_init(&acc, 1);
  gh_dd_acc_add(&acc, &worst);
  double sum = -1;
  gh_dd_acc_reduce(&acc, c, &sum);
  printf("ranks %d, sum %.3g\n", gh_comm_size(c), sum);
  gh_dd_acc_free(&acc);
  gh_comm_finalize(c);
  if (sum != worst) return 1;
  gh_gmm_free(&s.pdfs[0]);
  gh_gmm_free(&s.pdfs[1]);
  return worst <= 1e-4 ? 0 : 1;
}
EOF
  cc -std=c11 -D_GNU_SOURCE -o "$T/ll" "$T/ll.c" $(pkg-config --static --cflags --libs gmmhmm)
  run "$T/ll"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"cpu-ref frame 2: "* ]] && [[ "$output" == *"cpu frame 2: "* ]]
  [[ "$output" == *"ranks 1, sum "* ]]
  # the number itself: pdf 1 at frame 0 is log N((0.5,-0.2); (-2,4), diag(4, 0.25)) = -37.899127
  # (sum over d of -0.5 log(2 pi v_d) - 0.5 (x_d - mu_d)^2 / v_d, by hand)
  [[ "$output" == *"cpu-ref frame 0: -3.51664"?" -37.89912"* ]]
}
