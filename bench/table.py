#!/usr/bin/env python3
"""bench/table.py LOG -- the table of `make bench` (bench/run.sh) from its log: for each EM and scoring shape, our
default configuration against the peers measured in the same run (PyTorch GEMM forms, scikit-learn), with frames/s,
GFLOP/s, the fraction of the measured ceiling and the error against float64; then every configuration tried."""
import re, sys

log = open(sys.argv[1]).read().splitlines()
ceil = {}
h2d = None
em, em_peer, sk, score, tpeer = [], {}, {}, [], {}
hmm, hpeer, vpeer = [], {}, {}
tthreads = ""
recipe, io, ubm = [], [], []
real, rpeer = [], {}
for line in log:
    m = re.match(r"ceilings: copy (\S+) GB/s, sgemm fp32 (\S+) TFLOP/s, tf32 (\S+) TFLOP/s", line)
    if m: ceil = dict(copy=float(m[1]), fp32=float(m[2]), tf32=float(m[3]))
    m = re.match(r"ceilings: host-to-device (\S+) GB/s page-locked, (\S+) GB/s beside a kernel", line)
    if m: h2d = (float(m[1]), float(m[2]))
    m = re.match(r"em (\w+) N=(\d+) D=(\d+) M=(\d+) (.*) precision=(\S+) variant=(\S+): (\S+) ms/iter \(E-step (\S+), "
                 r"M-step (\S+)\)\s+(\S+) frames/s\s+(\S+) GFLOP/s.*stats err (\S+)\s+total err (\S+)"
                 r"(?:\s+M-step (\w+) err (\S+))?", line)
    if m:
        em.append(dict(type=m[1], N=int(m[2]), D=int(m[3]), M=int(m[4]), dev=m[5], prec=m[6], var=m[7], ms=float(m[8]),
                       e=float(m[9]), mstep=float(m[10]), fps=float(m[11]), gf=float(m[12]), err=m[13],
                       where=m[15] or "host", merr=m[16] or "-"))
    m = re.match(r"gemm_em_(\w+)_N(\d+)_D(\d+)_K(\d+) (\S+) ms/iter", line)
    if m: em_peer[(m[1], int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
    m = re.match(r"ubm sid (\S+) device=(\S+) nj=(\d+) frames=(\d+): (\S+) s total; full avg loglike (\S*) \(Kaldi's final.ubm (\S*)\)", line)
    if m: ubm.append(dict(name=m[1], dev=m[2], nj=int(m[3]), frames=int(m[4]), total=float(m[5]), ll=m[6], ref=m[7]))
    m = re.match(r"recipe (\S+) (\w+) device=(\S+) nj=(\d+): (\S+) s total, (\S+) s/iter \((\d+) iterations\); (.*)", line)
    if m: recipe.append(dict(name=m[1], what=m[2], dev=m[3], nj=int(m[4]), total=float(m[5]), it=float(m[6]), n=int(m[7]),
                             acc=m[8]))
    m = re.match(r"io (\w+) P=(\d+) G=(\d+) D=(\d+) T=(\d+) (.*): end to end (\d+) frames/s, kernel (\d+) frames/s, ratio (\S+)", line)
    if m: io.append(dict(type=m[1], P=int(m[2]), G=int(m[3]), D=int(m[4]), T=int(m[5]), dev=m[6], e2e=int(m[7]), k=int(m[8]),
                         r=float(m[9])))
    m = re.match(r"real (\S+) (full|diag) G=(\d+) D=(\d+) frames=(\d+) device=(\S+): whole_s=(\S+) estep_med_s=(\S+) "
                 r"iter_med_s=(\S+) estep_frames_per_s=(\S+) cand_per_frame=(\S+) (fp32=.*) avg_loglike=(\S+)", line)
    if m: real.append(dict(data=m[1], cov=m[2], G=int(m[3]), D=int(m[4]), N=int(m[5]), dev=m[6], whole=m[7], est=m[8], it=m[9],
                           fps=m[10], cand=m[11], paths=m[12], ll=m[13]))
    m = re.match(r"real peer (\S+) (full|diag) G=(\d+): whole_s=\S+ (\{.*\}); ratio (.*)", line)
    if m: rpeer[(m[1], m[2], int(m[3]))] = m[5]
    m = re.match(r"torch-cpu threads=(\d+)", line)
    if m: tthreads = f", {m[1]} threads"
    m = re.match(r"sklearn-em (\w+) N=(\d+) D=(\d+) M=(\d+): (\S+) ms/iter", line)
    if m: sk[(m[1], int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
    m = re.match(r"score (\w+) P=(\d+) G=(\d+) D=(\d+) T=(\d+) (\S+) precision=(\S+) variant=(\S+): kernel (\S+) ms "
                 r"(\S+) frames/s (\S+) GFLOP/s; end to end (\S+) ms (\S+) frames/s; max err (\S+)", line)
    if m:
        score.append(dict(type=m[1], P=int(m[2]), G=int(m[3]), D=int(m[4]), T=int(m[5]), dev=m[6], prec=m[7],
                          var=m[8], ms=float(m[9]), fps=float(m[10]), gf=float(m[11]), e2e_fps=float(m[13]), err=m[14]))
    m = re.match(r"hmm (ragged |long )?(\S+) S=(\d+) M=(\d+) T=(\d+) (\S+) precision=(\S+) variant=(\S+): kernel (\S+) ms (\S+) "
                 r"frames/s (\S+) GFLOP/s; end to end (\S+) ms; max rel err (\S+) \((\d+) seqs vs CPU double\)"
                 r"(?:; (\d+) path states differ)?(?:; max abs err (\S+) nats per frame)?", line)
    if m:
        hmm.append(dict(rag=m[1] == "ragged ", long=m[1] == "long ", op=m[2], S=int(m[3]), M=int(m[4]), T=int(m[5]), dev=m[6], prec=m[7], var=m[8],
                        ms=float(m[9]), fps=float(m[10]), gf=float(m[11]), err=m[13], k=m[14], pdiff=m[15],
                        aerr=f"; {m[16]} nats/frame" if m[16] else ""))
    m = re.match(r"torch-hmm N=(\d+) M=(\d+) T=(\d+): (\S+) ms/call (\S+) frames/s (\S+) GFLOP/s; max rel err (\S+)", line)
    if m: hpeer[(int(m[1]), int(m[2]), int(m[3]))] = (float(m[4]), float(m[5]), float(m[6]), m[7])
    m = re.match(r"torch-viterbi N=(\d+) M=(\d+) T=(\d+): (\S+) ms/call (\S+) frames/s; max rel err (\S+)", line)
    if m: vpeer[(int(m[1]), int(m[2]), int(m[3]))] = (float(m[4]), float(m[5]), m[6])
    m = re.match(r"torch-peer (\w+): (\d+) pdfs x (\d+) Gaussians, D=(\d+), (\d+) frames: (\S+) ms/call\s+(\S+) frames/s", line)
    if m: tpeer[(m[1], int(m[2]), int(m[3]), int(m[4]))] = (float(m[6]), float(m[7]))

def f(x, d=1): return "–" if x is None else f"{x:.{d}f}"
print()
if ceil:
    print(f"Ceilings (same run): copy {ceil['copy']:.0f} GB/s, SGEMM fp32 {ceil['fp32']:.1f} TFLOP/s, "
          f"TF32 {ceil['tf32']:.1f} TFLOP/s.  GFLOP/s below: EM = GEMM count 4 N M E (E = expanded dimension), "
          "scoring = the seeds' count; 'of fp32' = GFLOP/s / SGEMM fp32 ceiling.")
if h2d:
    print(f"Host-to-device copies (page-locked, 160 MB): {h2d[0]:.1f} GB/s alone, {h2d[1]:.1f} GB/s beside a kernel "
          "(the I/O rows' link).")
print()
print("| job (default configuration) | ours | frames/s | GFLOP/s | of fp32 | PyTorch | ours vs PyTorch | "
      "scikit-learn | ours vs sklearn | max err vs float64 |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in em:
    if r["prec"] != "auto" or r["var"] != "auto" or not r["dev"].startswith("cuda"): continue
    key = (r["type"], r["N"], r["D"], r["M"])  # GPU peer
    p, s = em_peer.get(key), sk.get(key)
    frac = r["gf"] / (ceil["fp32"] * 1e3) if ceil else None
    print(f"| EM iteration {r['type']} N={r['N']} D={r['D']} M={r['M']} | {r['ms']:.2f} ms (E {r['e']:.2f} + M {r['mstep']:.2f}) "
          f"| {r['fps']:.3g} | {r['gf']:.0f} | {f(frac, 2)} | {f(p, 2)} ms | {f(p / r['ms'] if p else None, 2)}× | "
          f"{f(s, 0)} ms | {f(s / r['ms'] if s else None, 0)}× | stats {r['err']}; M-step on the {r['where']}"
          f"{', params ' + r['merr'] + ' vs host' if r['merr'] != '-' else ''} |")
for r in score:
    if r["prec"] != "auto" or r["var"] != "auto" or r["dev"] != "cuda": continue
    p = tpeer.get((r["type"], r["P"], r["G"], r["D"]))
    frac = r["gf"] / (ceil["fp32"] * 1e3) if ceil else None
    print(f"| scoring {r['type']} {r['P']} × {r['G']}, D={r['D']}, {r['T']} frames | {r['ms']:.2f} ms (kernel; "
          f"{r['e2e_fps']:.3g} frames/s end to end) | {r['fps']:.3g} | {r['gf']:.0f} | {f(frac, 2)} | "
          f"{f(p[0] if p else None, 2)} ms | {f(r['fps'] / p[1] if p else None, 2)}× | – | – | {r['err']} |")
for r in em:  # the CPU backend against the PyTorch CPU version of the same math (same machine, all cores)
    if not r["dev"].startswith("cpu ("): continue
    key = ("cpu_" + r["type"], r["N"], r["D"], r["M"])
    p = em_peer.get(key)
    print(f"| EM iteration {r['type']} N={r['N']} D={r['D']} M={r['M']}, CPU ({r['dev']}) | {r['ms']:.1f} ms "
          f"(E {r['e']:.1f} + M {r['mstep']:.1f}) | {r['fps']:.3g} | {r['gf']:.0f} | – | {f(p, 1)} ms (PyTorch CPU{tthreads}) | "
          f"{f(p / r['ms'] if p else None, 2)}× | – | – | stats {r['err']} |")
for r in recipe:  # the real recipe end to end (bench/recipe.sh); the CPU row is its peer
    cpu = next((c for c in recipe if c["what"] == r["what"] and c["dev"] == "cpu"), None)
    vs = f"{cpu['it'] / r['it']:.2f}× vs our CPU backend" if cpu and r["dev"] != "cpu" and r["it"] > 0 else "–"
    label = {"gmm": "GMM per digit, full 8, 20 EM iterations", "hmm": "HMM-GMM per digit, 8 states, diag 8, 16 BW iterations"}
    print(f"| recipe {r['name']} {label.get(r['what'], r['what'])}, nj={r['nj']}, {r['dev']} | {r['it']:.2f} s/iter "
          f"({r['total']:.1f} s total) | – | – | – | – | {vs} | – | – | {r['acc']} |")
for r in ubm:  # Kaldi's sid UBM loop (bench/ubm.sh); Kaldi's own run: 12.7 s on 2 CPU cores for FSDD
    vs = f"{12.7 / r['total']:.2f}× vs Kaldi's 12.7 s (2 CPU cores)" if r["name"] == "fsdd" and r["total"] > 0 else "–"
    print(f"| UBM sid loop (diag 32 + full 32, D=60), {r['name']} {r['frames']} frames, nj={r['nj']}, {r['dev']} | "
          f"{r['total']:.1f} s total | {r['frames'] / r['total']:.3g} | – | – | – | {vs} | – | – | "
          f"avg loglike {r['ll']} (Kaldi's UBM {r['ref']}) |")
for r in real:  # gmm-train on real speech beside generated data (bench/realspeech.sh) and the PyTorch job
    print(f"| gmm-train {r['data']} {r['N']} frames × {r['D']}, {r['G']} {r['cov']}, {r['dev']} | {r['it']} s/iter "
          f"(E-step {r['est']}; job {r['whole']} s) | {r['fps']} | – | – | e2e_job.py | {rpeer.get((r['data'], r['cov'], r['G']), '–')} "
          f"| – | – | {r['cand']} candidates per frame; {r['paths']}; avg loglike {r['ll']} |")
for r in io:  # gmm-score-gpu end to end (read, score, write overlapped) vs its kernel time (bench/io.sh)
    print(f"| gmm-score-gpu end to end {r['type']} {r['P']} × {r['G']}, D={r['D']}, {r['T']} frames in page cache, "
          f"{r['dev']} | {r['e2e']:.3g} frames/s | {r['e2e']:.3g} | – | – | – | – | – | – | "
          f"{r['r']:.2f} of the kernel's {r['k']:.3g} frames/s (target 0.8) |")
for r in hmm:
    if r["var"] != "auto" or r["rag"] or r["long"] or r["dev"] != "cuda" or r["prec"] not in ("auto", "fp64"): continue
    key = (r["S"], r["M"], r["T"])
    v = vpeer.get(key) if r["op"] == "viterbi" else None
    p = (v[0], v[1], None, v[2]) if v else hpeer.get(key)
    what = "fp32 max-plus Viterbi" if v else "scaled fp32 forward"
    frac = r["gf"] / (ceil["fp32"] * 1e3) if ceil else None
    pd = f"; {r['pdiff']} path states differ" if r["pdiff"] is not None else ""
    print(f"| HMM {r['op']} dense {r['S']} states × {r['M']} seqs × {r['T']} frames | {r['ms']:.2f} ms (kernel) | "
          f"{r['fps']:.3g} | {r['gf']:.0f} | {f(frac, 2)} | {f(p[0] if p else None, 2)} ms ({what}; err {p[3] if p else '–'}) | "
          f"{f(p[0] / r['ms'] if p else None, 2)}× | – | – | {r['err']} ({r['k']} seqs{r['aerr']}){pd} |")
print()
print("Every configuration tried:")
print()
print("| job | device | precision | variant | time | frames/s | GFLOP/s | max err |")
print("|---|---|---|---|---|---|---|---|")
for r in em:
    print(f"| EM {r['type']} N={r['N']} D={r['D']} M={r['M']} | {r['dev']} | {r['prec']} | {r['var']} | {r['ms']:.2f} ms "
          f"(E {r['e']:.2f} + M {r['mstep']:.2f} on the {r['where']}) | {r['fps']:.3g} | {r['gf']:.0f} | {r['err']} |")
for r in hmm:
    print(f"| HMM {r['op']} {r['S']} × {r['M']} × {r['T']}{' ragged 100..50' if r['rag'] else ''}{' (one utterance)' if r['long'] else ''} | {r['dev']} | "
          f"{r['prec']} | {r['var']} | {r['ms']:.2f} ms | {r['fps']:.3g} | {r['gf']:.0f} | {r['err']} |")
for k, p in hpeer.items():
    print(f"| HMM forward {k[0]} × {k[1]} × {k[2]} | PyTorch | fp32 | peer | {p[0]:.2f} ms | {p[1]:.3g} | {p[2]:.0f} | {p[3]} |")
for k, p in vpeer.items():
    print(f"| HMM Viterbi {k[0]} × {k[1]} × {k[2]} | PyTorch | fp32 | peer | {p[0]:.2f} ms | {p[1]:.3g} | – | {p[2]} |")
for r in score:
    print(f"| scoring {r['type']} {r['P']} × {r['G']} D={r['D']} | {r['dev']} | {r['prec']} | {r['var']} | "
          f"{r['ms']:.2f} ms | {r['fps']:.3g} | {r['gf']:.0f} | {r['err']} |")
