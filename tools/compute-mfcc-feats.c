/* compute-mfcc-feats -- MFCC (mel-frequency cepstral coefficient) features from waveforms
 * (Kaldi's featbin/compute-mfcc-feats.cc); the loop is gh_compute_feats_main
 * (lib/feat/feat-tool.c), the features lib/feat/feat.c. */
#include "feat/feat.h"

static const char *usage =
    "Create MFCC feature files.\n"
    "Usage:  compute-mfcc-feats [options...] <wav-rspecifier> <feats-wspecifier>\n"
    "e.g.: compute-mfcc-feats --sample-frequency=8000 --dither=0 scp:data/train/wav.scp ark,scp:mfcc.ark,mfcc.scp\n"
    "<wav-rspecifier> is scp:wav.scp with lines \"<key> <path>\" or \"<key> <command> |\"\n";

int main(int argc, char **argv) { return gh_compute_feats_main(argc, argv, GH_FEAT_MFCC, usage); }
