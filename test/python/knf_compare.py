#!/usr/bin/env python3
"""Compare our MFCC/fbank archive with kaldi-native-fbank on the same WAVs.

Usage: knf_compare.py [--feat=mfcc|fbank] [--sample-frequency=16000] [--tol=1e-4]
                      [--window-type=povey] [--num-mel-bins=23] [--num-ceps=13]
                      [--snip-edges=true] [--use-energy=...] [--dither=0]
                      <wav.scp> <feats.ark>

wav.scp lines are "key path" (paths relative to the working directory).  For
every key, features are computed with kaldi_native_fbank (OnlineMfcc /
OnlineFbank, the input marked finished) on the int16 sample values (Kaldi's
scale), with the same options, and compared with the matrix of that key in
feats.ark (read with kaldiio).  Prints one line per key and a summary with
the maximum absolute error and the maximum of |a-b| / max(1, |ref|); exits 1
if that exceeds --tol, a key is missing, or a shape differs.
"""
import argparse
import sys
import wave

import kaldi_native_fbank as knf
import kaldiio
import numpy as np


def str2bool(s):
    return s.lower() in ("1", "true", "yes")


def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2:
            raise SystemExit(f"{path}: only 16-bit WAVs are compared")
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return x.reshape(-1, w.getnchannels())[:, 0].astype(np.float32), w.getframerate()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--feat", default="mfcc", choices=["mfcc", "fbank"])
    p.add_argument("--sample-frequency", type=float, default=16000)
    p.add_argument("--frame-length", type=float, default=25)
    p.add_argument("--frame-shift", type=float, default=10)
    p.add_argument("--window-type", default="povey")
    p.add_argument("--num-mel-bins", type=int, default=23)
    p.add_argument("--num-ceps", type=int, default=13)
    p.add_argument("--low-freq", type=float, default=20)
    p.add_argument("--high-freq", type=float, default=0)
    p.add_argument("--snip-edges", default="true")
    p.add_argument("--use-energy", default=None)
    p.add_argument("--dither", type=float, default=0.0)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("wav_scp")
    p.add_argument("ark")
    a = p.parse_args()

    opts = knf.MfccOptions() if a.feat == "mfcc" else knf.FbankOptions()
    fo = opts.frame_opts
    fo.samp_freq = a.sample_frequency
    fo.frame_length_ms = a.frame_length
    fo.frame_shift_ms = a.frame_shift
    fo.window_type = a.window_type
    fo.snip_edges = str2bool(a.snip_edges)
    fo.dither = a.dither
    opts.mel_opts.num_bins = a.num_mel_bins
    opts.mel_opts.low_freq = a.low_freq
    opts.mel_opts.high_freq = a.high_freq
    if a.feat == "mfcc":
        opts.num_ceps = a.num_ceps
    if a.use_energy is not None:
        opts.use_energy = str2bool(a.use_energy)

    ours = dict(kaldiio.load_ark(a.ark))
    worst_abs = worst_rel = 0.0
    bad = 0
    n = 0
    for line in open(a.wav_scp):
        parts = line.split(None, 1)
        if len(parts) < 2:
            continue
        key, path = parts[0], parts[1].strip()
        x, sr = read_wav(path)
        comp = knf.OnlineMfcc(opts) if a.feat == "mfcc" else knf.OnlineFbank(opts)
        comp.accept_waveform(sr, x.tolist())
        comp.input_finished()
        ref = np.array([comp.get_frame(i) for i in range(comp.num_frames_ready)], dtype=np.float64)
        if key not in ours:
            print(f"{key}: missing from {a.ark}")
            bad += 1
            continue
        got = np.asarray(ours[key], dtype=np.float64)
        if ref.size == 0 and got.size == 0:
            continue
        if got.shape != ref.shape:
            print(f"{key}: shape {got.shape} vs kaldi-native-fbank {ref.shape}")
            bad += 1
            continue
        d = np.abs(got - ref)
        rel = d / np.maximum(1.0, np.abs(ref))
        worst_abs = max(worst_abs, float(d.max()))
        worst_rel = max(worst_rel, float(rel.max()))
        n += 1
    print(f"{a.feat}: {n} utterances, max abs error {worst_abs:.3g}, max rel error {worst_rel:.3g} "
          f"(|a-b|/max(1,|ref|)), tolerance {a.tol:g}")
    if bad or worst_rel > a.tol:
        sys.exit(1)


if __name__ == "__main__":
    main()
