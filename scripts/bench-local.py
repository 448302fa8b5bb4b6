#!/usr/bin/env python3
"""rein's embedded local model side by side with llama.cpp's own server.

    python3 scripts/bench-local.py [--model PATH] [--rounds 3]
                                   [--order rein,server] [--json OUT.json]
                                   [--no-build]

One run measures both sides, one after the other (never at the same time),
for a few rounds whose order alternates; each request's fastest round is
kept, since other processes on the machine only ever add time. With two
threads on two cores any other busy process stalls both engines badly (their
threads wait for each other at every step); on a shared machine, running the
whole script under `nice -n -10` (as root) keeps such noise out, for both
sides alike.

1. rein: builds and runs the `local_bench` example in release
   (crates/rein-providers/examples/local_bench.rs). The workload is defined
   there; `local_bench --workload` prints it and this script replays the very
   same requests against the server.
2. llama.cpp's server as shipped prebuilt by the Python package `xllamacpp`
   (installed with pip if missing; into a venv under
   ~/.cache/rein/bench-venv when the system Python refuses). It runs in a
   child process of its own, on a loopback port, with the same model,
   threads and context size and otherwise its defaults; requests go to its
   OpenAI-compatible /v1/chat/completions endpoint with streaming, through
   urllib.

Rates are derived from the raw per-request figures by the same code for
both sides (client side: time to first token, prompt tokens evaluated,
generated tokens, end of stream). Each engine's own timings are shown too:
the server's `timings` object, and for rein the figures of its
REIN_LOCAL_TRACE log (prompt evaluation time, generation time).

The model: --model, else REIN_MODEL_PATH, else
~/.cache/rein/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf.
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
VENV = Path.home() / ".cache" / "rein" / "bench-venv"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the server
# `--serve` mode: this same file, run by the Python that has xllamacpp, in a
# process of its own (so that its memory high-water mark is the server's).

SERVE_FLAG = "--serve"


def proc_status(pid="self"):
    """VmHWM and VmRSS of a process, in KiB."""
    out = {"hwm_kib": 0, "rss_kib": 0}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        for key, name in (("VmHWM:", "hwm_kib"), ("VmRSS:", "rss_kib")):
            if line.startswith(key):
                out[name] = int(line.split()[1])
    return out


def serve(argv):
    """Start xllamacpp's server and wait until stdin closes."""
    model, threads, ctx, port = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    import xllamacpp  # noqa: PLC0415 (only the server process loads it)

    before = proc_status()
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_ctx = ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    started = time.monotonic()
    server = xllamacpp.Server(params)
    load_s = time.monotonic() - started
    info = {
        "address": server.listening_address,
        "version": getattr(xllamacpp, "__version__", "?"),
        "system_info": xllamacpp.get_system_info().strip(),
        "load_s": load_s,
        "memory_before_load": before,
        "defaults": {
            "n_batch": params.n_batch,
            "n_ubatch": params.n_ubatch,
            "flash_attn_type": int(params.flash_attn_type),
            "cache_prompt": params.cache_prompt,
            "n_cache_reuse": params.n_cache_reuse,
            "cache_ram_mib": params.cache_ram_mib,
            "warmup": params.warmup,
            "poll": params.cpuparams.poll,
        },
    }
    print("READY " + json.dumps(info), flush=True)
    sys.stdin.read()
    del server


# ---------------------------------------------------------------- helpers


def model_path(arg):
    if arg:
        return str(Path(arg).expanduser().resolve())
    if os.environ.get("REIN_MODEL_PATH"):
        return str(Path(os.environ["REIN_MODEL_PATH"]).expanduser().resolve())
    return str(Path.home() / ".cache" / "rein" / "models" / MODEL_FILE)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def python_with_xllamacpp():
    """A Python interpreter that can import xllamacpp, installing it if need be."""
    candidates = [sys.executable, str(VENV / "bin" / "python3")]
    for py in candidates:
        if Path(py).exists() and subprocess.run(
            [py, "-c", "import xllamacpp"], capture_output=True
        ).returncode == 0:
            return py
    log("installing xllamacpp with pip ...")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "xllamacpp"],
        capture_output=True,
        text=True,
    )
    if r.returncode == 0:
        return sys.executable
    if "externally-managed" not in (r.stdout + r.stderr):
        sys.exit(f"pip install xllamacpp failed:\n{r.stdout}\n{r.stderr}")
    log(f"the system Python is externally managed: using a venv in {VENV}")
    if not (VENV / "bin" / "python3").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    py = str(VENV / "bin" / "python3")
    subprocess.run([py, "-m", "pip", "install", "xllamacpp"], check=True)
    return py


def build_rein():
    """Build the example in release; the path of its binary."""
    log("building the local_bench example (release) ...")
    cmd = [
        "cargo", "build", "-p", "rein-providers", "--features", "local",
        "--release", "--example", "local_bench", "--message-format=json",
    ]
    r = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("cargo build failed")
    for line in r.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and \
                msg["target"]["name"] == "local_bench":
            return msg["executable"]
    sys.exit("cargo did not report the local_bench binary")


DURATION = re.compile(r"([\d.]+)(ns|µs|us|ms|s)")
TRACE_PROMPT = re.compile(r"^---- PROMPT \(cached (\d+) of (\d+), (\S+)\)$")
TRACE_OUTPUT = re.compile(r"^---- OUTPUT \((\w+), (\d+) tokens in (\S+)\)$")


def seconds(text):
    m = DURATION.fullmatch(text)
    if not m:
        return None
    scale = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]
    return float(m.group(1)) * scale


def parse_trace(text):
    """rein's REIN_LOCAL_TRACE log: per request (prompt_n evaluated,
    prompt_s, predicted_n, predicted_s), in order."""
    out, pending = [], None
    for line in text.splitlines():
        m = TRACE_PROMPT.match(line)
        if m:
            cached, total = int(m.group(1)), int(m.group(2))
            pending = {"prompt_n": total - cached, "prompt_s": seconds(m.group(3))}
            continue
        m = TRACE_OUTPUT.match(line)
        if m and pending is not None:
            pending["predicted_n"] = int(m.group(2))
            pending["predicted_s"] = seconds(m.group(3))
            out.append(pending)
            pending = None
    return out


# ---------------------------------------------------------------- the sides


def run_rein(binary, model):
    log("rein: running the workload ...")
    with tempfile.TemporaryFile(mode="w+") as err:
        env = dict(os.environ, REIN_LOCAL_TRACE="1")
        r = subprocess.run(
            [binary, "--model", model], stdout=subprocess.PIPE, stderr=err,
            text=True, env=env,
        )
        err.seek(0)
        trace = err.read()
    if r.returncode != 0:
        log(trace[-4000:])
        sys.exit("local_bench failed")
    report = json.loads(r.stdout.strip().splitlines()[-1])
    engine = parse_trace(trace)
    requests = [report["warmup"], *report["single"], *report["session"]["turns"]]
    if len(engine) == len(requests):
        for req, eng in zip(requests, engine):
            req["engine"] = eng
    else:
        log(f"warning: {len(engine)} trace records for {len(requests)} requests")
    return report


def chat_messages(system, messages):
    return [{"role": "system", "content": system}, *messages]


def stream_chat(base, messages, max_tokens):
    """One streamed chat completion, timed on the client side."""
    body = {
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": 42,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    req = urllib.request.Request(
        base + "/v1/chat/completions", json.dumps(body).encode(),
        {"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    first = None
    text, usage, timings, finish = [], {}, {}, ""
    with urllib.request.urlopen(req, timeout=3600) as resp:
        for raw in resp:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            event = json.loads(data)
            for choice in event.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    if first is None:
                        first = time.perf_counter() - started
                    text.append(content)
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
            if event.get("usage"):
                usage = event["usage"]
            if event.get("timings"):
                timings = event["timings"]
    total = time.perf_counter() - started
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is None:
        cached = timings.get("cache_n", 0)
    return {
        "prompt_tokens": usage.get("prompt_tokens", 0),
        "cached_tokens": cached,
        "generated_tokens": usage.get("completion_tokens", 0),
        "ttft_s": first if first is not None else total,
        "total_s": total,
        "finish": finish,
        "text": "".join(text),
        "engine": {
            "prompt_n": timings.get("prompt_n"),
            "prompt_s": (timings.get("prompt_ms") or 0) / 1e3,
            "predicted_n": timings.get("predicted_n"),
            "predicted_s": (timings.get("predicted_ms") or 0) / 1e3,
        },
    }


def run_server(py, model, workload):
    port = free_port()
    log(f"server: starting xllamacpp on 127.0.0.1:{port} ...")
    child = subprocess.Popen(
        [py, str(Path(__file__).resolve()), SERVE_FLAG, model,
         str(workload["threads"]), str(workload["context_size"]), str(port)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if not os.environ.get("BENCH_SERVER_LOG") else None,
        text=True,
    )
    try:
        info = None
        for line in child.stdout:
            if line.startswith("READY "):
                info = json.loads(line[6:])
                break
        if info is None:
            sys.exit("the xllamacpp server did not start (BENCH_SERVER_LOG=1 shows its log)")
        base = info["address"].rstrip("/")
        memory_after_load = proc_status(child.pid)
        log("server: running the workload ...")

        def one(request):
            return stream_chat(
                base, chat_messages(request["system"], request["messages"]),
                request["max_tokens"],
            )

        warmup = one(workload["warmup"])
        single = [one(r) for r in workload["single"]]
        session = workload["session"]
        history, turns = [], []
        started = time.perf_counter()
        for user in session["user_messages"]:
            history.append({"role": "user", "content": user})
            turn = stream_chat(
                base, chat_messages(session["system"], history), session["max_tokens"]
            )
            history.append({"role": "assistant", "content": turn["text"]})
            turns.append(turn)
        wall_s = time.perf_counter() - started
        memory_end = proc_status(child.pid)
    finally:
        if child.stdin:
            child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return {
        "side": "server",
        "model": model,
        "threads": workload["threads"],
        "context_size": workload["context_size"],
        "load_s": info["load_s"],
        "memory_before_load": info["memory_before_load"],
        "memory_after_load": memory_after_load,
        "memory_end": memory_end,
        "warmup": warmup,
        "single": single,
        "session": {"wall_s": wall_s, "turns": turns},
        "server": {k: info[k] for k in ("version", "system_info", "defaults")},
    }


# ---------------------------------------------------------------- figures


def derive(report):
    """The same figures, computed the same way, for either side."""
    single = report["single"]

    def evaluated(r):
        return r["prompt_tokens"] - r["cached_tokens"]

    pp = [evaluated(r) / r["ttft_s"] for r in single]
    tg = [
        (r["generated_tokens"] - 1) / (r["total_s"] - r["ttft_s"])
        for r in single if r["generated_tokens"] > 1 and r["total_s"] > r["ttft_s"]
    ]
    eng = [r.get("engine") for r in single if r.get("engine")]
    eng_pp = [e["prompt_n"] / e["prompt_s"] for e in eng if e.get("prompt_s")]
    eng_tg = [e["predicted_n"] / e["predicted_s"] for e in eng if e.get("predicted_s")]
    turns = report["session"]["turns"]
    med = statistics.median
    return {
        "prompt_tokens": [r["prompt_tokens"] for r in single],
        "evaluated": [evaluated(r) for r in single],
        "generated": [r["generated_tokens"] for r in single],
        "pp": med(pp),
        "tg": med(tg) if tg else float("nan"),
        "ttft": med(r["ttft_s"] for r in single),
        "eng_pp": med(eng_pp) if eng_pp else float("nan"),
        "eng_tg": med(eng_tg) if eng_tg else float("nan"),
        "session_wall": report["session"]["wall_s"],
        "session_turns_s": sum(t["total_s"] for t in turns),
        "session_prompt": sum(t["prompt_tokens"] for t in turns),
        "session_reused": sum(t["cached_tokens"] for t in turns),
        "session_evaluated": sum(evaluated(t) for t in turns),
        "session_generated": sum(t["generated_tokens"] for t in turns),
        "session_ttft": med(t["ttft_s"] for t in turns),
        "load_s": report["load_s"],
        "hwm_before": report["memory_before_load"]["hwm_kib"],
        "hwm_after_load": report["memory_after_load"]["hwm_kib"],
        "hwm_end": report["memory_end"]["hwm_kib"],
    }


def mib(kib):
    return f"{kib / 1024:.0f} MiB"


def table(rein, server):
    a, b = derive(rein), derive(server)

    def ratio(x, y, higher_better=True):
        if not y or x != x or y != y:
            return ""
        return f"{x / y:.2f}×" if higher_better else f"{y / x:.2f}×"

    rows = [
        ("prompt tokens (evaluated) per request",
         "/".join(map(str, a["evaluated"])), "/".join(map(str, b["evaluated"])), ""),
        ("generated tokens per request",
         "/".join(map(str, a["generated"])), "/".join(map(str, b["generated"])), ""),
        ("prompt processing, client side (tok/s)",
         f"{a['pp']:.1f}", f"{b['pp']:.1f}", ratio(a["pp"], b["pp"])),
        ("generation, client side (tok/s)",
         f"{a['tg']:.2f}", f"{b['tg']:.2f}", ratio(a["tg"], b["tg"])),
        ("prompt processing, engine's own timing (tok/s)",
         f"{a['eng_pp']:.1f}", f"{b['eng_pp']:.1f}", ratio(a["eng_pp"], b["eng_pp"])),
        ("generation, engine's own timing (tok/s)",
         f"{a['eng_tg']:.2f}", f"{b['eng_tg']:.2f}", ratio(a["eng_tg"], b["eng_tg"])),
        ("time to first token (s)",
         f"{a['ttft']:.2f}", f"{b['ttft']:.2f}", ratio(a["ttft"], b["ttft"], False)),
        ("10-turn session: wall time, fastest round (s)",
         f"{a['session_wall']:.1f}", f"{b['session_wall']:.1f}",
         ratio(a["session_wall"], b["session_wall"], False)),
        ("10-turn session: sum of the turns' times (s)",
         f"{a['session_turns_s']:.1f}", f"{b['session_turns_s']:.1f}",
         ratio(a["session_turns_s"], b["session_turns_s"], False)),
        ("10-turn session: prompt tokens sent",
         str(a["session_prompt"]), str(b["session_prompt"]), ""),
        ("10-turn session: evaluated / reused from cache",
         f"{a['session_evaluated']} / {a['session_reused']}",
         f"{b['session_evaluated']} / {b['session_reused']}", ""),
        ("10-turn session: generated tokens",
         str(a["session_generated"]), str(b["session_generated"]), ""),
        ("10-turn session: median time to first token (s)",
         f"{a['session_ttft']:.2f}", f"{b['session_ttft']:.2f}",
         ratio(a["session_ttft"], b["session_ttft"], False)),
        ("model load (s)", f"{a['load_s']:.2f}", f"{b['load_s']:.2f}", ""),
        ("peak RSS (VmHWM) before loading the model",
         mib(a["hwm_before"]), mib(b["hwm_before"]), ""),
        ("peak RSS (VmHWM) after loading",
         mib(a["hwm_after_load"]), mib(b["hwm_after_load"]), ""),
        ("peak RSS (VmHWM) at the end", mib(a["hwm_end"]), mib(b["hwm_end"]),
         f"{abs(b['hwm_end'] - a['hwm_end']) / 1024:.0f} MiB "
         + ("less" if a["hwm_end"] <= b["hwm_end"] else "more")),
    ]
    out = ["rein vs server: above 1× means rein is ahead (higher rate, shorter time).",
           "",
           "| | rein (embedded) | llama.cpp server (xllamacpp) | rein vs server |",
           "| --- | --- | --- | --- |"]
    out += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |" for r in rows]
    return "\n".join(out)


def session_table(rein, server):
    out = ["| turn | rein prompt / reused / generated | rein time (s) "
           "| server prompt / reused / generated | server time (s) | same answer |",
           "| --- | --- | --- | --- | --- | --- |"]
    for i, (a, b) in enumerate(zip(rein["session"]["turns"], server["session"]["turns"])):
        out.append(
            f"| {i + 1} | {a['prompt_tokens']} / {a['cached_tokens']} / {a['generated_tokens']} "
            f"| {a['total_s']:.2f} | {b['prompt_tokens']} / {b['cached_tokens']} / "
            f"{b['generated_tokens']} | {b['total_s']:.2f} "
            f"| {'yes' if a['text'].strip() == b['text'].strip() else 'no'} |"
        )
    return "\n".join(out)


def best_of(rounds):
    """One report from several rounds of a side: each request's fastest
    measurement (noise from other processes only ever adds time), the
    fastest session wall time and load, the highest memory marks."""
    if len(rounds) == 1:
        return rounds[0]

    def fastest(items):
        return min(items, key=lambda r: r["total_s"])

    best = dict(rounds[0])
    best["warmup"] = fastest([r["warmup"] for r in rounds])
    best["single"] = [fastest(list(x)) for x in zip(*(r["single"] for r in rounds))]
    turns = [fastest(list(x)) for x in zip(*(r["session"]["turns"] for r in rounds))]
    best["session"] = {
        "wall_s": min(r["session"]["wall_s"] for r in rounds),
        "turns": turns,
    }
    best["load_s"] = min(r["load_s"] for r in rounds)
    for key in ("memory_before_load", "memory_after_load", "memory_end"):
        best[key] = {
            k: max(r[key][k] for r in rounds) for k in ("hwm_kib", "rss_kib")
        }
    return best


def main():
    if len(sys.argv) > 1 and sys.argv[1] == SERVE_FLAG:
        serve(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of both sides (default 3); the order alternates "
                         "each round and each request's fastest round is kept")
    ap.add_argument("--order", default="rein,server",
                    help="which side runs first in round 1: rein,server or server,rein")
    ap.add_argument("--json", help="write all raw reports to this file")
    ap.add_argument("--no-build", action="store_true",
                    help="use target/release/examples/local_bench as it is")
    args = ap.parse_args()

    model = model_path(args.model)
    if not Path(model).is_file():
        sys.exit(f"model not found: {model} (run scripts/fetch-model.sh or set REIN_MODEL_PATH)")
    py = python_with_xllamacpp()
    binary = (str(REPO / "target" / "release" / "examples" / "local_bench")
              if args.no_build else build_rein())
    workload = json.loads(
        subprocess.run([binary, "--workload"], check=True, stdout=subprocess.PIPE,
                       text=True).stdout
    )

    order = args.order.split(",")
    if sorted(order) != ["rein", "server"]:
        sys.exit(f"--order must be rein,server or server,rein, not {args.order!r}")
    rounds = {"rein": [], "server": []}
    for n in range(args.rounds):
        log(f"round {n + 1} of {args.rounds}")
        for side in order if n % 2 == 0 else order[::-1]:
            if side == "rein":
                report = run_rein(binary, model)
            else:
                report = run_server(py, model, workload)
            rounds[side].append(report)
            log(f"  {side}: session {report['session']['wall_s']:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rounds, indent=1))
    rein, server = best_of(rounds["rein"]), best_of(rounds["server"])

    info = server["server"]
    print(f"model: {Path(model).name}; threads {workload['threads']}; "
          f"context {workload['context_size']}; greedy; {args.rounds} round(s), "
          f"best of each request")
    print(f"server: xllamacpp {info['version']}, defaults {json.dumps(info['defaults'])}")
    print(f"server CPU features: {info['system_info']}")
    print("session wall time per round (s): rein "
          + ", ".join(f"{r['session']['wall_s']:.1f}" for r in rounds["rein"])
          + "; server "
          + ", ".join(f"{r['session']['wall_s']:.1f}" for r in rounds["server"]))
    print()
    print(table(rein, server))
    print()
    print(session_table(rein, server))
    same = [a["text"].strip() == b["text"].strip()
            for a, b in zip(rein["single"], server["single"])]
    print()
    print(f"single-request answers identical on both sides: {same}")


if __name__ == "__main__":
    main()
