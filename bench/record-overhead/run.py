#!/usr/bin/env python3
"""Recording overhead as users feel it: step time under `memtrace record`
(default capture: requests, kernels on) divided by the step time of the same
script run plain with PyTorch's default allocator, for GPT-2 small training,
ResNet-50 training, BERT-base bf16 training and the GPT-2 generation loop.
Targets: 1.03, 1.03, 1.05, 1.05. Prints figures and asserts nothing.

Lockstep. A shared host's speed drifts over tens of seconds by more than
recording costs, so runs one after another compare badly. Instead the plain
run and each recorded configuration run at the same time, each in its own
process with its model loaded, and take turns (samples/torch/common.py
--turns): one block of steps each, a fraction of a second, one process at a
time on the GPU, --cycles times, the order rotated by one each cycle: every
process takes every place in turn and none ever runs two turns in a row.
(The order used to be reversed every other cycle. Then the first and the
last process ran two turns back to back at each turn of the order, on
caches and clocks warm from their own work: the two plain runs of one
lockstep differed by 5.6 and 5.8 %, their 95 % interval clear of 1.)
No process ends before every block is timed: a process's teardown (CUDA
context, the recorder's last flush) slowed the blocks of the others in the
last cycle by up to 8x. Each line gives per configuration the mean ms per
step, the ratio of the means to plain with its 95 % interval (whole cycles
resampled: the interval the A/A row shows is the smallest effect a run can
tell), and the median and range of the ratios within a cycle.

Where the cost goes:
- --variant adds recorded configurations: 'NAME=OPTIONS' with `memtrace
  record` options ('as-is=--capture as-is', 'sites=--stacks python'); a
  word VAR=VALUE among them sets the environment instead
  ('old=MEMTRACE_INJECT_PATH=/path/libmemtrace-inject.so'); 'NAME=plain'
  adds a second plain run, whose ratio shows what the lockstep itself reads
  where nothing differs, 'NAME=plain --OPTION' a plain run with an option
  of the workload script ('peer=plain --memory-history': PyTorch's own
  recorder), and 'NAME=plain VAR=VALUE' a plain run with that
  environment ('cupti=plain CUDA_INJECTION64_PATH=.../libcupti-kernels.so':
  CUPTI's kernel records alone, cupti-kernels.c; with MT_BENCH_CALL_TIMES=PREFIX
  it also times the program's CUDA calls, which call_times.py compares).
- --hook-floor LIB --recorder DIR adds 'hook' and 'hook+frames': the script
  run with the PyTorch bridge attached and nothing behind it
  (hook_floor.py), the least request capture can cost.
- --only torch_ops.py runs the per-operation workloads instead (1000
  allocations, or 1000 kernel launches, a step: ms per step is us per
  operation; the difference to plain is what recording adds to each).

Each process also reports its CPU time per step, of all its threads and of
the threads that run the steps alone (main and autograd: what recording
adds on the program's own threads, apart from the recorder's thread), and
the ratios of those means are printed beside the wall-time ratio.

The ratio of the lower quartiles (q25) is printed too. On a shared host a
CPU-bound block runs now at full speed, now at up to half of it, at random;
a few slow blocks move a mean by 10 %, but the quartile of the fast blocks
holds still, and recording's cost scales with the speed like the work's.
Each of the three estimates (ratio of means, median of the per-cycle
ratios, ratio of the lower quartiles) comes with its 95 % interval from
resampling whole cycles; the A/A row (a second plain run) says how far each
can be trusted. With many short turns (--block small, few variants) the
intervals narrow to a per cent or two, and then a process's own speed shows:
two plain processes of one BERT lockstep differed by 4.3 % [2.5-6.3] over
220 cycles (2026-11-25), more than an interval. Give two or more plain runs
('A/A=plain', 'A/B=plain'): a second line then compares every configuration
with their mean, cycle by cycle; and --rounds R runs the lockstep R times
with fresh processes, its intervals resampling the rounds too.

--pin CPU. A process tends to stay on the vCPU it started on, and the vCPUs
of a shared host may run at different speeds (a neighbour's work on the
same physical core): two plain processes once differed by 18 % over a whole
run. With --pin, after the warm-up turn, the threads that run the steps in every
process (its main thread and PyTorch's autograd threads) are bound to CPU,
and every other thread (the recorder's, CUPTI's, CUDA's, the launcher) to
all the other CPUs: each configuration's steps then run on the same vCPU,
and what recording runs beside them runs elsewhere, as on an idle core of a
user's machine.

Usage: run.py MEMTRACE [--cycles N] [--rounds R] [--block N] [--variant NAME[=OPTIONS]]... [--cpus LIST]
              [--script-args ARGS] [--pin CPU] [--hook-floor LIB --recorder DIR] [--only SCRIPTS] [--json PATH]
"""
import argparse
import json
import os
import random
import select
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH = os.path.join(HERE, "..", "..", "samples", "torch")

# name, script, arguments, steps a turn, target
WORKLOADS = [
    ("gpt2-small train", "gpt2_train.py", ["--warmup", "3", "--batch", "8"], 4, 1.03),
    ("resnet50 train", "resnet50_train.py", ["--warmup", "3", "--batch", "64"], 8, 1.03),
    ("bert-base bf16 train", "bert_train.py", ["--warmup", "5", "--batch", "32"], 12, 1.05),
    ("gpt2 generation", "generate.py", ["--warmup", "1", "--batch", "4", "--tokens", "256"], 1,
     1.05),
]
# Per operation (microseconds per op); only with --only torch_ops.py.
OPS = [
    ("alloc+free, 25 frames deep", "torch_ops.py", ["--op", "alloc", "--warmup", "5"], 30, None),
    ("kernel launch", "torch_ops.py", ["--op", "launch", "--warmup", "5"], 30, None),
    ("cudaGetDevice", "torch_ops.py", ["--op", "device", "--warmup", "5"], 30, None),
]


def command(memtrace, script, args, tmp, how, cpus):
    """The command line and environment of one run: plain (how None, or
    ("plain", ENV, SCRIPT_OPTIONS)), recorded (("record", OPTS, ENV)) or with the hook and
    nothing behind it (("floor", ARGS))."""
    path = os.path.join(TORCH if script != "torch_ops.py" else HERE, script)
    cmd = [sys.executable, path, "--no-expandable"] + args
    env = dict(os.environ)
    if how and how[0] == "plain":
        env.update(how[1])
        cmd += how[2]
    elif how and how[0] == "record":
        cmd = [memtrace, "record", "-o", os.path.join(tmp, "bench.db")] + how[1] + ["--"] + cmd
        env.update(how[2])
    elif how:
        cmd = [sys.executable, os.path.join(HERE, "hook_floor.py")] + how[1] + cmd[1:]
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    return cmd, env


def descendants(pid):
    """Process ids below pid, children first."""
    out = []
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                kids = [int(c) for c in f.read().split()]
        except OSError:
            continue
        for k in kids:
            out += [k] + descendants(k)
    return out


class Runner:
    """One process of a lockstep: started at once, then given turns."""

    def __init__(self, name, memtrace, script, args, tmp, how, cpus):
        self.name, self.tmp = name, tmp
        os.makedirs(tmp)
        self.go, self.done = os.path.join(tmp, "go"), os.path.join(tmp, "done")
        os.mkfifo(self.go)
        os.mkfifo(self.done)
        self.side = os.path.join(tmp, "side.json")
        cmd, env = command(memtrace, script, args + ["--turns", self.go + "," + self.done,
                                                     "--json", self.side], tmp, how, cpus)
        self.log = open(os.path.join(tmp, "log"), "w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.go_fd = self.done_fd = None

    def died(self):
        self.log.flush()
        with open(self.log.name) as f:
            tail = f.read()[-2000:]
        raise RuntimeError("%s exited with %s:\n%s" % (self.name, self.proc.poll(), tail))

    def open(self):
        """Opens the FIFOs once the process has (after loading its model)."""
        while self.go_fd is None:
            try:
                self.go_fd = os.open(self.go, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                if self.proc.poll() is not None:
                    self.died()
                select.select([], [], [], 0.05)
        os.set_blocking(self.go_fd, True)
        self.done_fd = os.open(self.done, os.O_RDONLY | os.O_NONBLOCK)

    def turn(self):
        """Gives the process one turn and waits until it hands it back."""
        try:
            os.write(self.go_fd, b"g")
        except BrokenPipeError:
            self.died()
        while True:
            ready, _, _ = select.select([self.done_fd], [], [], 1.0)
            data = os.read(self.done_fd, 1) if ready else b""
            if data:
                return
            if self.proc.poll() is not None:
                self.died()
            if ready:  # end of file: the process has not opened DONE yet
                select.select([], [], [], 0.01)

    def pin(self, cpu):
        """Binds the threads that run the steps (the Python process's main
        thread, PyTorch's autograd threads) to cpu and every other thread of
        the process tree to the other CPUs."""
        others = set(os.sched_getaffinity(0)) - {cpu}
        steps = 0
        for pid in [self.proc.pid] + descendants(self.proc.pid):
            try:
                with open("/proc/%d/comm" % pid) as f:
                    python = f.read().startswith("python")
                tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
            except OSError:
                continue
            for tid in tids:
                try:
                    with open("/proc/%d/task/%d/comm" % (pid, tid)) as f:
                        name = f.read().strip()
                    runs_steps = python and (tid == pid or name.startswith("pt_autograd"))
                    os.sched_setaffinity(tid, {cpu} if runs_steps else others)
                    steps += runs_steps
                except OSError:  # the thread has ended
                    pass
        if not steps:
            raise RuntimeError("%s: --pin found no Python thread to bind" % self.name)

    def release(self):
        """Gives the process its last turn, in which it ends: given to every
        process once all blocks are timed, so that no process's teardown
        overlaps another's timed block."""
        try:
            os.write(self.go_fd, b"g")
        except BrokenPipeError:
            self.died()

    def finish(self):
        """Waits for the released process and returns its sidecar."""
        os.close(self.go_fd)
        if self.proc.wait() != 0:
            self.died()
        os.close(self.done_fd)
        self.log.close()
        with open(self.side) as f:
            return json.load(f)


def lockstep(memtrace, script, args, block, cycles, runs, tmp, cpus, pin):
    """Runs plain and each configuration in lockstep (with pin not None, its
    steps on that CPU); returns each one's sidecar (block_ms, block_cpu_ms:
    per step of every block), in the order of runs."""
    args = args + ["--steps", str(block * cycles), "--block", str(block)]
    procs = []
    try:
        for i, (name, how) in enumerate(runs):
            procs.append(Runner(name, memtrace, script, args, os.path.join(tmp, str(i)), how,
                                cpus))
        for p in procs:
            p.open()
        for p in procs:  # warm-up, one at a time
            p.turn()
        if pin is not None:  # autograd's threads exist after a step
            for p in procs:
                p.pin(pin)
        for c in range(cycles):
            for p in procs[c % len(procs):] + procs[:c % len(procs)]:
                p.turn()
        for p in procs:
            p.release()
        return [p.finish() for p in procs]
    finally:
        for p in procs:
            if p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait()


def merged(side, more):
    """A sidecar with another round's blocks appended."""
    side = dict(side)
    for key in ("block_ms", "block_cpu_ms", "block_step_cpu_ms"):
        side[key] = side[key] + more[key]
    return side


def variant(text):
    """NAME or NAME=WORDS: memtrace record options, or the word plain (run
    without memtrace) followed by options of the workload script, and
    VAR=VALUE words for the environment."""
    name, _, words = text.partition("=")
    opts = [w for w in words.split() if not (w[:1].isupper() and "=" in w)]
    env = dict(w.split("=", 1) for w in words.split() if w[:1].isupper() and "=" in w)
    if opts[:1] == ["plain"]:
        return name, ("plain", env, opts[1:]) if env or opts[1:] else None
    return name, ("record", opts, env)


def quartile(values):
    """The lower quartile of values (linear between the two nearest)."""
    v = sorted(values)
    k = (len(v) - 1) / 4
    i = int(k)
    return v[i] + (v[min(i + 1, len(v) - 1)] - v[i]) * (k - i)


def mean_ratio(runs, plain):
    """The ratio of the mean block times."""
    return sum(runs) / sum(plain)


def q25_ratio(runs, plain):
    """The ratio of the lower quartiles of the block times: the blocks the
    host ran at full speed, as on a quiet machine of the user's."""
    return quartile(runs) / quartile(plain)


def median_paired(runs, plain):
    """The median of the ratios within a cycle."""
    return statistics.median(r / p for r, p in zip(runs, plain))


def interval(stat, runs, plain, rounds=None, draws=2000):
    """The 95 % interval of stat(runs, plain) by resampling whole cycles (a
    cycle's blocks of every configuration together), seeded so that a rerun
    on the same figures prints the same interval. rounds (lists of the
    cycles' indices, one a round of fresh processes) resamples in two
    stages: rounds, then cycles within each round drawn, so that what a
    process's own speed adds shows in the interval."""
    rng = random.Random(1)
    rounds = rounds or [list(range(len(runs)))]
    ratios = []
    for _ in range(draws):
        pick = []
        for _ in rounds:
            cycles = rounds[rng.randrange(len(rounds))]
            pick += [cycles[rng.randrange(len(cycles))] for _ in cycles]
        ratios.append(stat([runs[i] for i in pick], [plain[i] for i in pick]))
    ratios.sort()
    return ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def pooled_line(sides, names, copies, rounds=None):
    """Each configuration against the mean, cycle by cycle, of plain and its
    copies (the variants named in copies): a process's own speed (its
    memory layout, its place on the host) can differ from another's by a
    few per cent for a whole run, which more cycles do not average out, but
    more plain processes do. Returns the line and its figures by name."""
    plains = [s["block_ms"] for s, n in zip(sides, names) if n == names[0] or n in copies]
    pooled = [statistics.mean(c) for c in zip(*plains)]
    line, figures = "  against the mean of %d plain processes:" % len(plains), {}
    for v, side in zip(names[1:], sides[1:]):
        if v in copies:
            continue
        runs = side["block_ms"]
        m, (low, high) = mean_ratio(runs, pooled), interval(mean_ratio, runs, pooled, rounds)
        md = median_paired(runs, pooled)
        md_low, md_high = interval(median_paired, runs, pooled, rounds)
        figures[v] = dict(ratio=round(m, 4), ratio_95=[round(low, 4), round(high, 4)],
                          paired_ratio=round(md, 4),
                          paired_ratio_95=[round(md_low, 4), round(md_high, 4)])
        line += "  %s %.3f [%.3f-%.3f] (cycles %.3f [%.3f-%.3f])" % (v, m, low, high, md,
                                                                    md_low, md_high)
    return line, figures


def report(name, target, sides, names, copies=(), rounds=None):
    """Prints a workload's line (per configuration: mean ms per step, the
    ratio of the means to plain, the median and range of the ratios within a
    cycle, the ratio of the lower quartiles, each ratio with its 95 %
    interval from resampling cycles, the ratio of the mean CPU times) and
    returns its row for --json. With copies (the names of further plain
    runs), a second line gives each configuration against the mean of all
    plain runs. rounds: the cycles of each round of fresh processes (see
    interval)."""
    plain, plain_cpu = sides[0]["block_ms"], sides[0]["block_cpu_ms"]
    base, base_cpu = statistics.mean(plain), statistics.mean(plain_cpu)
    base_steps_cpu = statistics.mean(sides[0]["block_step_cpu_ms"])
    row = dict(workload=name, plain_ms=plain, plain_cpu_ms=plain_cpu,
               plain_step_threads_cpu_ms=round(base_steps_cpu, 4), target=target, variants={})
    line = "%-26s plain %8.3f ms" % (name, base)
    for v, side in zip(names[1:], sides[1:]):
        runs, cpu = side["block_ms"], side["block_cpu_ms"]
        steps_cpu = statistics.mean(side["block_step_cpu_ms"])
        mean = statistics.mean(runs)
        paired = sorted(r / p for r, p in zip(runs, plain))
        q25 = q25_ratio(runs, plain)
        low, high = interval(mean_ratio, runs, plain, rounds)
        q25_low, q25_high = interval(q25_ratio, runs, plain, rounds)
        med_low, med_high = interval(median_paired, runs, plain, rounds)
        row["variants"][v] = dict(recorded_ms=runs, recorded_cpu_ms=cpu,
                                  cpu_ratio=round(statistics.mean(cpu) / base_cpu, 4),
                                  step_threads_cpu_ms=round(steps_cpu, 4),
                                  step_threads_cpu_ratio=round(steps_cpu / base_steps_cpu, 4),
                                  ratio=round(mean / base, 4), q25_ratio=round(q25, 4),
                                  ratio_95=[round(low, 4), round(high, 4)],
                                  q25_ratio_95=[round(q25_low, 4), round(q25_high, 4)],
                                  paired_ratio_95=[round(med_low, 4), round(med_high, 4)],
                                  paired_ratio=round(statistics.median(paired), 4),
                                  paired_min=round(paired[0], 4),
                                  paired_max=round(paired[-1], 4),
                                  added_ms=round(mean - base, 4))
        line += ("  %s %8.3f ms ratio %.3f [95%% %.3f-%.3f] (cycles %.3f [%.3f-%.3f], %.3f-%.3f;"
                 " q25 %.3f [%.3f-%.3f]; cpu %.3f, steps' threads %.3f)") % (
                     v, mean, mean / base, low, high, statistics.median(paired), med_low,
                     med_high, paired[0], paired[-1], q25, q25_low, q25_high,
                     statistics.mean(cpu) / base_cpu, steps_cpu / base_steps_cpu)
    print(line + ("  (target %.2f)" % target if target else ""), flush=True)
    if copies:
        line, row["against_pooled_plain"] = pooled_line(sides, names, copies, rounds)
        print(line, flush=True)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("memtrace")
    p.add_argument("--cycles", type=int, default=10, help="turns each run takes (default 10)")
    p.add_argument("--rounds", type=int, default=1, metavar="R",
                   help="run each lockstep R times, with fresh processes each time, and pool "
                        "the cycles (intervals resample rounds, then cycles)")
    p.add_argument("--block", type=int, metavar="N",
                   help="steps a turn (default: the workload's own, 1-12)")
    p.add_argument("--json")
    p.add_argument("--only", help="comma-separated workload scripts to run")
    p.add_argument("--variant", action="append", type=variant, metavar="NAME[=OPTIONS]",
                   help="a recorded configuration (memtrace record options); repeatable; "
                        "default: one, 'default', with no options")
    p.add_argument("--script-args", metavar="ARGS", default="",
                   help="options added after each workload script's own, so that they win "
                        "('--tokens 64' for a shorter generation step)")
    p.add_argument("--cpus", help="run every process under taskset -c CPUS")
    p.add_argument("--pin", type=int, metavar="CPU",
                   help="after warm-up, bind every process's step threads to CPU and its other "
                        "threads to the other CPUs")
    p.add_argument("--hook-floor", metavar="LIB", help="libhook-floor.so: add the hook-only rows")
    p.add_argument("--recorder", metavar="DIR",
                   help="with --hook-floor: the folder with torch-bridge.cpp and python/")
    a = p.parse_args()
    if a.pin is not None and a.pin not in os.sched_getaffinity(0):
        p.error("--pin %d: not a CPU this process may use" % a.pin)
    variants = a.variant or [("default", ("record", [], {}))]
    if a.hook_floor:
        if not a.recorder:
            p.error("--hook-floor needs --recorder")
        floor = ["--noop", a.hook_floor, "--recorder", a.recorder]
        variants = [("hook", ("floor", floor)),
                    ("hook+frames", ("floor", floor + ["--python-sites"]))] + variants
    runs = [("plain", None)] + variants
    only = a.only.split(",") if a.only else None
    chosen = [w for w in WORKLOADS + OPS if (w[1] in only if only else w[1] != "torch_ops.py")]
    if not chosen:
        p.error("--only: no such workload script")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # the first recording of a Python program may build the PyTorch bridge
        cmd, env = command(a.memtrace, chosen[0][1], chosen[0][2] + ["--steps", "1"], tmp,
                           ("record", [], {}), None)
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        for n, (name, script, args, block, target) in enumerate(chosen):
            args = args + a.script_args.split()
            sides, rounds = None, []
            for k in range(a.rounds):
                got = lockstep(a.memtrace, script, args, a.block or block, a.cycles, runs,
                               os.path.join(tmp, "w%d-%d" % (n, k)), a.cpus, a.pin)
                first = len(got[0]["block_ms"]) * k
                rounds.append(list(range(first, first + len(got[0]["block_ms"]))))
                sides = got if sides is None else [merged(s, g) for s, g in zip(sides, got)]
            rows.append(report(name, target, sides, [r for r, _ in runs],
                               [r for r, how in runs[1:] if how is None],
                               rounds if a.rounds > 1 else None))
            rows[-1]["rounds"] = a.rounds
            if a.json:  # after each workload: a run cut short keeps what it measured
                with open(a.json, "w") as f:
                    json.dump(rows, f, indent=1)

if __name__ == "__main__":
    main()
