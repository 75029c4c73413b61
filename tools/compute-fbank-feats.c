/* compute-fbank-feats -- log mel filterbank (FBANK) features from waveforms
 * (Kaldi's featbin/compute-fbank-feats.cc); the loop is gh_compute_feats_main
 * (lib/feat/feat-tool.c), the features lib/feat/feat.c. */
#include "feat/feat.h"

static const char *usage =
    "Create FBANK feature files.\n"
    "Usage:  compute-fbank-feats [options...] <wav-rspecifier> <feats-wspecifier>\n"
    "e.g.: compute-fbank-feats --sample-frequency=8000 --dither=0 scp:data/train/wav.scp ark,scp:fbank.ark,fbank.scp\n"
    "<wav-rspecifier> is scp:wav.scp with lines \"<key> <path>\" or \"<key> <command> |\"\n";

int main(int argc, char **argv) { return gh_compute_feats_main(argc, argv, GH_FEAT_FBANK, usage); }
