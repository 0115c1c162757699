#!/usr/bin/python3
"""zoo_cputime.py — CPU time per run (user + sys) of zoo models, strata
(`strata bench`) against ONNX Runtime (tests/zoo/ort_zoo.js bench), by the
difference of two invocations with N1 and N2 timed runs, so that loading
and planning cancel; the two runtimes alternate, REPEATS rounds, and the
median ratio is printed (bench/RESULTS.md, "Four tf2onnx vision models").

  bench/cpu/zoo_cputime.py STRATA THREADS N1 N2 REPEATS ID...

Inputs are the zoo's seeded ones (tests/zoo/zoo.py), written under
/tmp/zoo_cputime/ID.
"""
import json, os, subprocess, sys, resource
strata, threads, n1, n2, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT + "/tests/zoo")
import zoo
models = zoo.load_manifest()
def cpu(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
for mid in sys.argv[6:]:
    m = models[mid]
    d = "/tmp/zoo_cputime/" + mid
    os.makedirs(d, exist_ok=True)
    model = zoo.model_path(m, d)
    files = zoo.write_inputs(zoo.gen_inputs(m), d)
    def st_cmd(n):
        c = [strata, "bench", model, "--threads", str(threads), "--warmup", "1", "--runs", str(n), "-q"]
        for name, p in files[0].items(): c += ["-i", "%s=%s" % (name, p)]
        return c
    def ort_cmd(n):
        jf = "%s/job_%d.json" % (d, n)
        json.dump({"model": model, "threads": threads, "steps": files, "state": {}, "runs": n, "warmup": 1}, open(jf, "w"))
        return ["node", ROOT + "/tests/zoo/ort_zoo.js", "bench", jf]
    st, ort = [], []
    for _ in range(reps):
        st.append((cpu(st_cmd(n2)) - cpu(st_cmd(n1))) / (n2 - n1) * 1e3)
        ort.append((cpu(ort_cmd(n2)) - cpu(ort_cmd(n1))) / (n2 - n1) * 1e3)
    st.sort(); ort.sort()
    print("%-16s threads %d  strata %s ms  ORT %s ms  ratio(median) %.2f" % (mid, threads, ["%.2f" % x for x in st], ["%.2f" % x for x in ort], st[len(st)//2] / ort[len(ort)//2]), flush=True)
