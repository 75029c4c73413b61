#!/usr/bin/env bats
# make install: tools, static libraries, public headers (each one
# compiles on its own from the installed tree), gmmhmm.pc, man pages; a small C
# program built against the installed tree with pkg-config computes the
# per-frame log-likelihoods of a tiny GMM set through the kernels' backend and
# checks them against the closed form (|diff| <= 1e-4 nats, float kernels).

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
  [ -f "$P/lib/libgmmhmm.a" ] && [ -f "$P/lib/libgmmhmm-kernels.a" ]
  [ -f "$P/include/gmmhmm/backend.h" ] && [ -f "$P/include/gmmhmm/gmm/gmm.h" ] && [ -f "$P/include/gmmhmm/io/table.h" ]
  # every public header of the source tree is installed, and none refers outside the tree
  n_src=$(ls "$ROOT"/lib/*/*.h | wc -l)
  [ "$(find "$P/include/gmmhmm" -name '*.h' | wc -l)" -eq $((n_src + 1)) ]
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
#include "backend.h"
#include "gmm/gmm.h"
#include "base/gh-base.h"

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
    gh_dev_model *m = b->ops->model_upload(b, &s);
    float out[3 * 2];
    b->ops->loglikes(b, m, X, 3, out);
    for (int t = 0; t < 3; ++t) {
      double x[2] = {X[2 * t], X[2 * t + 1]};
      double a = log(w0[0]) + lognorm(x, mu0, v0), c = log(w0[1]) + lognorm(x, mu0 + 2, v0 + 2);
      double mx = a > c ? a : c, ref0 = mx + log(exp(a - mx) + exp(c - mx)), ref1 = lognorm(x, mu1, v1);
      double e0 = fabs(out[2 * t] - ref0), e1 = fabs(out[2 * t + 1] - ref1);
      if (e0 > worst) worst = e0;
      if (e1 > worst) worst = e1;
      printf("%s frame %d: %.6f %.6f (closed form %.6f %.6f)\n", devs[k], t, out[2 * t], out[2 * t + 1], ref0, ref1);
    }
    b->ops->model_free(b, m);
    gh_backend_free(b);
  }
  printf("worst abs diff %.3g\n", worst);
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
  # the number itself: pdf 1 at frame 0 is log N((0.5,-0.2); (-2,4), diag(4, 0.25)) = -37.899127
  # (sum over d of -0.5 log(2 pi v_d) - 0.5 (x_d - mu_d)^2 / v_d, by hand)
  [[ "$output" == *"cpu-ref frame 0: -3.51664"?" -37.89912"* ]]
}
