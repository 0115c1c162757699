#!/usr/bin/python3
"""The command line's manners (tools/strata.c, tools/options.c,
tools/progress.c).

  cli_test.py STRATA HEADER SEED_DIR

  - `strata --version` prints the version strata.h declares;
  - `strata help`, `strata --help`: exit 0, every command listed;
  - for every command, `strata help CMD` and `strata CMD --help` exit 0
    with the same text: its usage and its options with their defaults;
    every option that help lists is taken by the command's parser (given
    with a valid value it is never the reason the command fails), and
    some defaults are the ones the code uses;
  - errors are one line, "strata: ...", exit 1, nothing on stdout: an
    unknown option names the command and the nearest option, another
    command's option says whose it is, an unknown command the nearest
    command;
  - bench and check --runs draw progress on stderr when it is a terminal
    (a pty here) and print nothing there when it is a pipe.
"""
import os
import pty
import re
import select
import subprocess
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def one_line_error(args, want):
    rc, out, err = run(args)
    ok = rc == 1 and out == "" and err.count("\n") == 1 and err.startswith("strata: ") and want in err
    check(ok, "%s: expected exit 1 and one line containing %r, got exit %d, stdout %r, stderr %r" %
          (" ".join(args[1:]), want, rc, out, err))


COMMANDS = ["run", "check", "inspect", "bench", "detect", "ocr", "probe", "serve"]

# a valid value for each placeholder help shows
VALUES = {"--size": "320", "N": "1", "A": "0.5", "R": "0.5", "S": "0.5", "T": "0.5", "BYTES": "100000000", "NAME=N": "n=1",
          "[NAME=]FILE.npy": "x.npy", "NAME=FILE.npy": "y=r.npy", "DIR": ".", "OUT.png": "/nonexistent/o.png",
          "MODEL": "m.onnx", "FILE": "k.txt"}

# errors that mean the parser refused the option itself
OPTION_ERRORS = ("unknown option", "does not apply", "not parsed", "needs a", "must be", "unexpected argument")


def options_of(text):
    """(name, value placeholder or None) of each option line in help text."""
    opts = []
    for line in text.splitlines():
        m = re.match(r"^  (?:(-\w), )?(--[\w-]+)(?: (\S+))?", line)
        if m:
            opts.append((m.group(2), m.group(3)))
            if m.group(1):
                opts.append((m.group(1), m.group(3)))
    return opts


def test_version(strata, header):
    text = open(header).read()
    want = ".".join(re.search(r"#define ST_VERSION_%s (\d+)" % k, text).group(1) for k in ("MAJOR", "MINOR", "PATCH"))
    rc, out, err = run([strata, "--version"])
    check(rc == 0 and out == "strata %s\n" % want and err == "", "--version: exit %d, %r (strata.h says %s)" % (rc, out, want))


def test_help(strata):
    for args in ([strata, "help"], [strata, "--help"], [strata, "-h"]):
        rc, out, err = run(args)
        check(rc == 0 and err == "", "%s: exit %d, stderr %r" % (" ".join(args[1:]), rc, err))
        for c in COMMANDS:
            check(re.search(r"^  %s " % c, out, re.M) is not None, "%s does not list %s" % (" ".join(args[1:]), c))
    rc, out, err = run([strata])
    check(rc == 1 and out == "" and "usage: strata" in err, "no arguments: exit %d, usage on stderr" % rc)
    listed = 0
    for c in COMMANDS:
        rc, text, err = run([strata, "help", c])
        check(rc == 0 and err == "" and text.startswith("usage: strata %s " % c), "help %s: exit %d %r" % (c, rc, err))
        for form in ([strata, c, "--help"], [strata, c, "-h"], [strata, c, "whatever", "--bogus", "--help"]):
            rc2, text2, _ = run(form)
            check(rc2 == 0 and text2 == text, "%s: exit %d, differs from 'help %s'" % (" ".join(form[1:]), rc2, c))
        opts = options_of(text)
        check(len(opts) >= 3 and ("--help", None) in opts, "help %s lists %d options" % (c, len(opts)))
        for name, value in opts:
            if name in ("--help", "-h"):
                continue
            listed += 1
            args = [name] + ([VALUES.get(name, VALUES.get(value, value.split("|")[0]))] if value else [])
            if c == "probe":  # parsed in full, then refused for a backend without the experiment
                cmd = [strata, c] + args + (["--backend", "none"] if name != "--backend" else [])
                if name == "--backend":
                    cmd = [strata, c, name, "none"]
            elif c == "detect":
                cmd = [strata, c, "/nonexistent/m.onnx", "/nonexistent/i.png"] + args
            elif c == "ocr":
                cmd = [strata, c, "/nonexistent/i.png"] + args
            else:
                cmd = [strata, c, "/nonexistent/m.onnx"] + args
            rc, out, err = run(cmd)
            check(rc == 1 and not any(e in err for e in OPTION_ERRORS),
                  "%s: help lists it, but the parser says: %s" % (" ".join(cmd[1:]), err.strip()))
    print("help: %d commands, %d options, each taken by its parser" % (len(COMMANDS), listed))
    defaults = {("bench", "--runs"): "20", ("bench", "--warmup"): "3", ("check", "--atol"): "1e-5",
                ("detect", "--conf"): "0.25", ("detect", "--iou"): "0.45", ("detect", "--size"): "640",
                ("probe", "--runs"): "200", ("run", "--backend"): "cpu", ("run", "--precision"): "f32"}
    for (c, opt), want in defaults.items():
        _, text, _ = run([strata, "help", c])
        block = re.search(r"^  (?:-\w, )?%s\b.*?(?=^  -|\Z)" % re.escape(opt), text, re.M | re.S)
        check(block is not None and "(default: %s" % want in " ".join(block.group(0).split()),
              "help %s: %s does not show default %s" % (c, opt, want))


def test_errors(strata, seed):
    model = os.path.join(seed, "c2f.onnx")
    one_line_error([strata, "bench", model, "--run", "3"], "bench: unknown option '--run' (did you mean '--runs'?)")
    one_line_error([strata, "run", model, "--thread", "2"], "run: unknown option '--thread' (did you mean '--threads'?)")
    one_line_error([strata, "check", model, "--sanitise"], "check: unknown option '--sanitise' (did you mean '--sanitize'?)")
    one_line_error([strata, "run", model, "--hazard"], "run: unknown option '--hazard' (did you mean '--hazard-mode'?)")
    one_line_error([strata, "bench", model, "--zzzzzzzz"], "bench: unknown option '--zzzzzzzz' (strata help bench")
    one_line_error([strata, "inspect", model, "--atol", "1"], "inspect: option '--atol' does not apply to inspect (it is for check;")
    one_line_error([strata, "detect", model, "x.png", "-i", "x.npy"], "detect: option '-i' does not apply to detect")
    one_line_error([strata, "probe", "--rnus", "3"], "probe: unknown option '--rnus' (did you mean '--runs'?)")
    one_line_error([strata, "chek", model], "unknown command 'chek' (did you mean 'check'?)")
    one_line_error([strata, "help", "bnech"], "help: unknown command 'bnech' (did you mean 'bench'?)")
    one_line_error([strata, "--verison"], "unknown option '--verison' (did you mean '--version'?)")
    one_line_error([strata, "run"], "run: no model given")
    one_line_error([strata, "bench", model, "--runs"], "bench: option --runs needs a value")


def with_stderr_on_pty(args):
    """Runs args with stderr on a pseudo-terminal: (exit, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, text=False)
    os.close(slave)
    got = b""
    while True:
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the last holder of the slave side closed it
            break
        if not chunk:
            break
        got += chunk
    out = p.stdout.read()
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, out.decode(), got.decode(errors="replace")


def test_progress(strata, seed):
    model = os.path.join(seed, "c2f.onnx")
    bench = [strata, "bench", model, "--runs", "30", "--warmup", "2"]
    rc, out, term = with_stderr_on_pty(bench)
    check(rc == 0 and "30 runs, median" in out, "bench on a terminal: exit %d, stdout %r" % (rc, out))
    check("bench: warmup 2/2" in term and "bench: run 0/30" in term and "bench: run 30/30, last " in term,
          "bench on a terminal drew no progress: %r" % term[-300:])
    # the progress line is blanked at the end: the terminal's last line is empty
    check(term.rstrip(" ").endswith("\r"), "bench's progress line was not erased: %r" % term[-80:])
    rc, out, err = run(bench)
    check(rc == 0 and err == "", "bench with stderr on a pipe: exit %d, stderr %r" % (rc, err))
    chk = [strata, "check", model, "-i", os.path.join(seed, "c2f_input_0.npy"), "--ref-dir", os.path.join(seed, "c2f_ref"),
           "--runs", "5"]
    rc, out, term = with_stderr_on_pty(chk)
    check(rc == 0 and "outputs bit-identical  PASS" in out, "check --runs on a terminal: exit %d, %r" % (rc, out))
    check("check: run 5/5, 0 outputs differed" in term, "check --runs on a terminal drew no progress: %r" % term[-300:])
    rc, out, err = run(chk)
    check(rc == 0 and err == "", "check --runs with stderr on a pipe: exit %d, stderr %r" % (rc, err))
    # one run, no progress even on a terminal
    rc, out, term = with_stderr_on_pty(chk[:-2])
    check(rc == 0 and "check:" not in term, "check without --runs drew progress: %r" % term)
    print("progress: drawn and erased on a terminal, nothing on a pipe")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    strata, header, seed = sys.argv[1:]
    test_version(strata, header)
    test_help(strata)
    test_errors(strata, seed)
    test_progress(strata, seed)
    print("FAIL: %d checks" % len(failures) if failures else "PASS")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
