/* fuzz_wav.c -- libFuzzer harness: the audio reader (lib/feat/wav.c,
 * gh_wave_read_mem over libsndfile): any bytes must give samples or a
 * clean failure; decoded sample counts must match the buffer. */
#include "fuzz-common.h"
#include "feat/wav.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FUZZ_BEGIN();
  gh_wave w;
  memset(&w, 0, sizeof w);
  if (gh_wave_read_mem(data, size, "fuzz.wav", &w)) {
    if (w.num_channels < 1 || w.num_samples < 0 || !(w.samp_freq > 0)) abort();
    volatile float acc = 0;
    for (int64_t i = 0; i < (int64_t)w.num_channels * w.num_samples; i++) acc += w.data[i];
    (void)acc;
  }
  gh_wave_free(&w);
  FUZZ_END();
}
