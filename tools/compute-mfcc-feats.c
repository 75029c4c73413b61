/* compute-mfcc-feats -- MFCC (mel-frequency cepstral coefficient) features from waveforms
 * (Kaldi's featbin/compute-mfcc-feats.cc); the loop is gh_compute_feats
 * (lib/feat/feat-tool.c, shared with its twin), the features lib/feat/feat.c. */
#include "base/gh-base.h"
#include "base/opts.h"
#include "feat/feat.h"

static const char *usage =
    "Create MFCC feature files.\n"
    "Usage:  compute-mfcc-feats [options...] <wav-rspecifier> <feats-wspecifier>\n"
    "e.g.: compute-mfcc-feats --sample-frequency=8000 --dither=0 scp:data/train/wav.scp ark,scp:mfcc.ark,mfcc.scp\n"
    "<wav-rspecifier> is scp:wav.scp with lines \"<key> <path>\" or \"<key> <command> |\"\n";

int main(int argc, char **argv) {
  gh_init(argv[0]);
  gh_compute_feats_args a = {.channel = -1, .min_duration = 0.0f, .subtract_mean = 0};
  gh_feat_opts_default(&a.fo, GH_FEAT_MFCC);
  gh_opts *po = gh_opts_new(usage);
  gh_feat_opts_register(&a.fo, po);
  gh_opts_int(po, "channel", &a.channel, "Channel to extract (-1 -> expect mono, 0 -> left, 1 -> right)");
  gh_opts_float(po, "min-duration", &a.min_duration, "Minimum duration of segments to process (in seconds).");
  gh_opts_bool(po, "subtract-mean", &a.subtract_mean, "Subtract mean of each feature file [CMS]; not recommended to do it this way.");
  if (gh_opts_parse(po, argc, argv) != 2) gh_opts_usage_exit(po);
  const int rc = gh_compute_feats(&a, gh_opts_arg(po, 0), gh_opts_arg(po, 1));
  gh_opts_free(po);
  return rc;
}
