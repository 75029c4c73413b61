/* test_env.c -- the GH_* knob readers (lib/base/env.h): defaults when unset
 * or empty, the values they accept, and one error line naming the variable
 * for anything else (checked in a child process: gh_die exits). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/env.h"
#include "base/gh-base.h"
#include "gh-test.h"

static const char *const words[] = {"fused", "gemm", NULL};

/* Runs f with GH_T=value in a child; 1 when it died with exit status 1 and
 * one stderr line that contains want. */
static int dies_with(void (*f)(void), const char *value, const char *want) {
  int fd[2];
  if (pipe(fd)) return 0;
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 2);
    close(fd[0]);
    setenv("GH_T", value, 1);
    f();
    _exit(0); /* did not die */
  }
  close(fd[1]);
  char buf[1024];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof buf - 1 && (r = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  const char *nl = strchr(buf, '\n');
  const int one_line = nl && nl[1] == 0;
  const int ok = WIFEXITED(st) && WEXITSTATUS(st) == 1 && one_line && strstr(buf, want) != NULL;
  if (!ok) printf("#   status %d, stderr: %s\n", st, buf);
  return ok;
}
static void read_int(void) { (void)gh_env_int("GH_T", 7, 1, 100); }
static void read_double(void) { (void)gh_env_double("GH_T", 5e-4, 1e-300, 1e300); }
static void read_word(void) { (void)gh_env_word("GH_T", -1, words); }

int main(int argc, char **argv) {
  (void)argc;
  gh_init(argv[0]);
  unsetenv("GH_T");
  GH_TEST_OK(gh_env_str("GH_T") == NULL && !gh_env_set("GH_T"), "unset: no value, not set");
  GH_TEST_OK(gh_env_int("GH_T", 7, 1, 100) == 7, "unset int: the default");
  GH_TEST_NEAR(gh_env_double("GH_T", 5e-4, 1e-300, 1e300), 5e-4, 0, "unset double: the default");
  GH_TEST_OK(gh_env_word("GH_T", -1, words) == -1, "unset word: the default");
  setenv("GH_T", "", 1);
  GH_TEST_OK(gh_env_str("GH_T") == NULL && !gh_env_set("GH_T") && gh_env_int("GH_T", 7, 1, 100) == 7 &&
                 gh_env_word("GH_T", 3, words) == 3,
             "empty: as unset");
  setenv("GH_T", "42", 1);
  GH_TEST_OK(gh_env_int("GH_T", 7, 1, 100) == 42 && gh_env_set("GH_T") && !strcmp(gh_env_str("GH_T"), "42"),
             "GH_T=42: 42");
  setenv("GH_T", "100", 1);
  GH_TEST_OK(gh_env_int("GH_T", 7, 1, 100) == 100, "GH_T=100: the upper bound is accepted");
  setenv("GH_T", "1e30", 1);
  GH_TEST_NEAR(gh_env_double("GH_T", 5e-4, 1e-300, 1e300), 1e30, 0, "GH_T=1e30: 1e30");
  setenv("GH_T", "gemm", 1);
  GH_TEST_OK(gh_env_word("GH_T", -1, words) == 1, "GH_T=gemm: word 1");
  setenv("GH_T", "fused", 1);
  GH_TEST_OK(gh_env_word("GH_T", -1, words) == 0, "GH_T=fused: word 0");
  unsetenv("GH_T");
  GH_TEST_OK(dies_with(read_int, "abc", "GH_T=abc: expected an integer in 1..100"), "GH_T=abc (int): dies naming it");
  GH_TEST_OK(dies_with(read_int, "12x", "GH_T=12x"), "GH_T=12x (int): trailing characters die");
  GH_TEST_OK(dies_with(read_int, "0", "GH_T=0: expected an integer in 1..100"), "GH_T=0 (int, 1..100): dies");
  GH_TEST_OK(dies_with(read_int, "101", "GH_T=101"), "GH_T=101 (int, 1..100): dies");
  GH_TEST_OK(dies_with(read_double, "-1", "GH_T=-1: expected a number"), "GH_T=-1 (double > 0): dies");
  GH_TEST_OK(dies_with(read_double, "nan", "GH_T=nan"), "GH_T=nan (double): dies");
  GH_TEST_OK(dies_with(read_word, "GEMM", "GH_T=GEMM: expected one of fused gemm"), "GH_T=GEMM (word): dies");
  return gh_test_done();
}
