"""Reliability drill: the failure cases of issue 27, repeated against real `mindnet` processes.

    python -m benchmarks.drill [--quick] [--out FILE.json] [--cases kill corrupt ...] [--seed 27]

Every step runs as a user runs it (`mindnet serve|ingest|check|query`, each its own process) on copies of a
vault and its data folder under one temp folder, removed at the end; the embedding is `hash-benchmark`
(offline, benchmark-only), so no Ollama is needed. One row per case: "tried" = rounds, "failed" = rounds where
something did not hold, "lost" = notes missing from, extra in or stale in the index after recovery, or a draft
the server acknowledged and then lost.
- kill: `serve` on a generated vault is SIGKILLed at a seeded random moment of its first import, of the
  catch-up of edits (edit, add, rename, delete) made while it was down, or while it follows such edits and a
  draft saved over POST /drafts; restarted until /health shows the import done, stopped; `check` must pass
  with every chunk embedded, and the index match the vault files note by note and a dry run chunk by chunk.
- corrupt: one damaged file per round on a copy of an imported index (the notes collection deleted; chunk
  payload pages, mindnet.json, the edges WAL, the embedding cache, threads.sqlite garbled), and a note added:
  `check` and `query` must not crash (signal, Traceback), `serve` must answer /health, and a plain `ingest`
  repair it, or a message name `mindnet ingest --full` and that repair it (`check` exit 0).
- disk: a 400 MB tmpfs as data folder, filled to 275 MB free (needs root, else "skipped"): `ingest` stops with
  exit 2 naming MINDNET_MIN_FREE_MB, `check`/`query`/`serve` answer, and with the filler gone `ingest` and
  `check` succeed. Without a mount: MINDNET_MIN_FREE_MB above the disk's free space, then 0.
- hostile: while `serve` follows the vault, notes of 120,000 `[`, 100,000 `[x](`, 16,000 headings, 20,000 tags
  and ~2 MB (just under max_file_bytes) are saved, then a normal note: seconds until POST /query finds it
  (failed past 120 s); then the import must end, `check` pass and every note be indexed.
- rebuild: POST /ingest {"full": true} on 1,000 generated notes while 8 clients POST /query in a loop: each
  must get a 200, or a 503 with Retry-After, within 10 s; after it every query has hits and the index matches.
While a server runs, a prober GETs /health every 50 ms (timeout 5 s): p50/p99/max per case; a failed or timed
out probe fails its round. Figures only, no timed assertions beyond the bounds named. Progress goes to stderr,
the table to stdout; the exit code is 1 when a row has failures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import httpx

from benchmarks.scale_vault import generate_vault
from mindnet.settings import DEFAULT_CONFIG_DIR, SAMPLE_VAULT, TypesConfig, load_yaml_model

PREFIX = "drill"
CLI = [sys.executable, "-m", "mindnet.cli"]
CLI_TIMEOUT = 900.0        # seconds any one mindnet command may take
START_TIMEOUT = 180.0      # seconds until a new server answers /health
DONE_TIMEOUT = 900.0       # seconds until a server's import is done
PROBE_EVERY, PROBE_TIMEOUT = 0.05, 5.0
SLOW_QUERY_S = 10.0        # rebuild: a query answered later than this fails
FIND_BOUND_S = 120.0       # hostile: the normal note must be found within this
MB = 1024 * 1024
Outcome = tuple[list[str], int, str]       # a round's problems, notes lost, one-line note
_CHILDREN: set[subprocess.Popen] = set()   # servers running; main() kills what is left


def log(text: str) -> None:
    sys.stderr.write(f"[drill {time.strftime('%H:%M:%S')}] {text}\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------- processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(folder: Path, vault: Path, data: Path | None = None, **extra: str) -> dict[str, str]:
    data = data or folder / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDNET_")}
    env.update(MINDNET_EMBEDDING="hash-benchmark", MINDNET_VAULT_ROOT=str(vault), MINDNET_QDRANT_URL="",
               MINDNET_QDRANT_PATH=str(data / "qdrant"), MINDNET_CACHE_DIR=str(data / "cache"),
               MINDNET_LOG_DIR=str(data / "logs"), MINDNET_COLLECTION_PREFIX=PREFIX, PYTHONUNBUFFERED="1",
               COLUMNS="200", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost", **extra)
    return env


@dataclass
class Run:
    code: int | None          # None: killed after the timeout
    out: str                  # stdout and stderr
    stdout: str = ""

    @property
    def crashed(self) -> bool:
        return self.code is None or self.code < 0 or "Traceback" in self.out

    def tail(self, n: int = 300) -> str:
        return " ".join(self.out.split())[-n:]


def cli(args: list[str], env: dict[str, str], cwd: Path) -> Run:
    try:
        done = subprocess.run([*CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Run(None, f"mindnet {' '.join(args)}: still running after {CLI_TIMEOUT:.0f} s, killed")
    return Run(done.returncode, done.stdout + done.stderr, done.stdout)


def check_ok(env: dict[str, str], cwd: Path) -> tuple[list[str], dict]:
    """`mindnet check --json`: problems (exit not 0, chunks without a vector) and its report."""
    run = cli(["check", "--json"], env, cwd)
    try:
        report = json.loads(run.stdout)
    except ValueError:
        report = {}
    bad = run.code != 0 or report.get("unembedded") != 0
    return [f"check exit {run.code}, unembedded {report.get('unembedded')}: {run.tail()}"] if bad else [], report


class Server:
    """`mindnet serve` in a child process on a free port (a context manager: started, then stopped)."""

    def __init__(self, env: dict[str, str], cwd: Path, name: str, *flags: str, ui: bool = False) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [*CLI, "serve", "--host", "127.0.0.1", "--port", str(self.port), *flags]
        self.args += [] if ui else ["--no-ui"]
        self.env, self.cwd, self.log_path = env, cwd, cwd / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.client = httpx.Client(trust_env=False, timeout=PROBE_TIMEOUT)

    def __enter__(self) -> Server:
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.args, env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT)
        _CHILDREN.add(self.proc)
        if not _until(lambda: self.health() is not None or self.proc.poll() is not None, START_TIMEOUT) \
                or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"serve gave no /health in {START_TIMEOUT:.0f} s (exit {self.proc.returncode}): "
                               + " ".join(self.log_path.read_text(errors="replace").split())[-600:])
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def health(self) -> dict | None:
        try:
            r = self.client.get(f"{self.url}/health")
            return r.json() if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    def wait_done(self, settle: float = 1.0) -> list[str]:
        """Wait until /health shows no import running or pending, `settle` s on end; problems if it never does."""
        since: list[float] = []

        def settled() -> bool:
            since[:] = since or [time.monotonic()] if import_done(self.health()) else []
            return bool(since) and time.monotonic() - since[0] >= settle
        return [] if _until(settled, DONE_TIMEOUT, every=0.2) else [f"import not done in {DONE_TIMEOUT:.0f} s: "
                                                                    f"{self.health()}"]

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM (mindnet closes its index), SIGKILL when it still runs 30 s later."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log(f"serve on port {self.port} still ran 30 s after SIGTERM: killed")
                self.kill9()
        _CHILDREN.discard(self.proc)
        self.client.close()


def import_done(health: dict | None) -> bool:
    live, imp = (health or {}).get("live") or {}, (health or {}).get("import") or {}
    return bool(health and health.get("searchable") and not health.get("importing") and imp.get("phase") == "done"
                and live.get("imports", 0) >= 1 and not any(live.get(k) for k in ("importing", "pending", "embedding")))


def _until(check: Callable[[], bool], timeout: float, every: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return False


def query_hits(url: str, text: str) -> list[dict] | None:
    """POST /query (hybrid): the hits, or None when it did not answer 200."""
    try:
        r = httpx.post(f"{url}/query", json={"query": text, "mode": "hybrid"}, timeout=60, trust_env=False)
    except httpx.HTTPError:
        return None
    return r.json().get("hits", []) if r.status_code == 200 else None


# --------------------------------------------------------------------------- /health prober


@dataclass
class Latency:
    ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        v = sorted(self.ms)
        q = statistics.quantiles(v, n=100, method="inclusive") if len(v) > 1 else v * 99
        return {"probes": len(v) + len(self.failures), "probe_failures": len(self.failures),
                "p50_ms": round(statistics.median(v), 1) if v else None, "p99_ms": round(q[98], 1) if v else None,
                "max_ms": round(v[-1], 1) if v else None}


# The prober is a process of its own with nothing but the standard library: a thread in the drill would time
# the drill's own garbage collections and client threads (20-30 ms pauses), not the server.
PROBE_SCRIPT = r"""
import gc, http.client, json, sys, time
gc.disable()
host, port, every, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
conn = None
while True:
    t0 = time.perf_counter()
    try:
        conn = conn or http.client.HTTPConnection(host, port, timeout=timeout)
        conn.request("GET", "/health")
        answer = conn.getresponse()
        body = answer.read()
        ms = 1000 * (time.perf_counter() - t0)
        if answer.status != 200:
            raise OSError(f"status {answer.status}")
        print("ok", round(ms, 2), (json.loads(body).get("import") or {}).get("phase", "?"), flush=True)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        conn = conn and conn.close()
        what = f"{type(exc).__name__} {exc} after {time.perf_counter() - t0:.1f} s"
        print("fail", " ".join(what.split()), flush=True)
    time.sleep(every)
"""


class Prober:
    """A context manager: GET /health every PROBE_EVERY s from a small process of its own; the latencies and
    failures into `sink`, the import phase of the last answer in `last_phase`."""

    def __init__(self, url: str, sink: Latency) -> None:
        self.url, self.sink, self.last_phase = url, sink, "?"
        self._out = tempfile.TemporaryFile(mode="w+", encoding="utf-8")     # a pipe would fill and block it
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> Prober:
        where = urllib.parse.urlsplit(self.url)
        self._proc = subprocess.Popen([sys.executable, "-c", PROBE_SCRIPT, where.hostname or "127.0.0.1",
                                       str(where.port), str(PROBE_EVERY), str(PROBE_TIMEOUT)], stdout=self._out)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        self._proc.terminate()
        self._proc.wait(timeout=30)
        self._out.seek(0)
        for line in self._out:
            kind, _, rest = line.rstrip("\n").partition(" ")
            if kind == "ok":
                ms, _, self.last_phase = rest.partition(" ")
                self.sink.ms.append(float(ms))
            elif kind == "fail":
                self.sink.failures.append(rest)
        self._out.close()


def serve_briefly(env: dict[str, str], cwd: Path, sink: Latency, *, ui: bool = False) -> tuple[list[str], dict]:
    """`serve --no-import --no-watch`, probed for a second: problems (no /health) and its last /health."""
    try:
        with Server(env, cwd, "serve", "--no-import", "--no-watch", ui=ui) as server:
            with Prober(server.url, sink):
                time.sleep(1.0)
            return [], server.health() or {}
    except RuntimeError as exc:
        return [str(exc)], {}


# --------------------------------------------------------------------------- vault and index


def vault_notes(vault: Path) -> set[str]:
    """The vault's notes by the shipped types config: *.md, not hidden, not excluded."""
    exclude = load_yaml_model(DEFAULT_CONFIG_DIR / "types.yaml", TypesConfig).exclude
    paths = (p.relative_to(vault).as_posix() for p in vault.rglob("*.md") if p.is_file())
    return {p for p in paths if not any(part.startswith(".") for part in p.split("/"))
            and not any(fnmatch(p, pattern) for pattern in exclude)}


# runs in a child process (the env names the index): what the index holds; with "plan", a dry run's chunk ids
_INSPECT = """
import json, sys
from pathlib import Path
from mindnet.service import Mindnet
m = Mindnet.from_env()
try:
    st, plan = m.store, None
    notes = {r.payload['path']: {'chunks': sorted(r.payload.get('chunk_ids') or []),
                                 'tail': (r.payload.get('fulltext') or '')[-400:]}
             for r in st.scroll('notes', payload=['path', 'chunk_ids', 'fulltext'])} if st.exists('notes') else {}
    if sys.argv[1:] == ['plan']:
        from mindnet.indexing.pipeline import plan_vault
        from mindnet.indexing.report import ImportReport
        planned = plan_vault(Path(m.settings.vault_root), m.settings.types, ImportReport(vault=''))
        plan = {p.note.path: sorted(x.node_id for x in p.nodes) for p in planned}
finally:
    m.close()
print(json.dumps({'notes': notes, 'plan': plan}))
"""


def compare(env: dict[str, str], cwd: Path, vault: Path, markers: dict[str, str], *, plan: bool = True
            ) -> list[str]:
    """The index against the vault: a line per note missing, extra, without the word the drill last wrote into
    it (`markers`), or (with `plan`) chunked otherwise than a dry run of the vault now."""
    try:
        done = subprocess.run([sys.executable, "-c", _INSPECT, *(["plan"] if plan else [])], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=CLI_TIMEOUT)
        index = json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        return [f"reading the index took over {CLI_TIMEOUT:.0f} s"]
    except (ValueError, IndexError):
        return [f"reading the index failed (exit {done.returncode}): {' '.join(done.stderr.split())[-300:]}"]
    notes, expected = index["notes"], vault_notes(vault)
    out = [f"missing {p}" for p in sorted(expected - notes.keys())]
    out += [f"extra {p}" for p in sorted(notes.keys() - expected)]
    out += [f"stale {p} (no {w})" for p, w in sorted(markers.items()) if p in notes and w not in notes[p]["tail"]]
    return out + [f"chunks differ {p}" for p, ids in sorted((index["plan"] or {}).items())
                  if p in notes and notes[p]["chunks"] != ids]


def mutate(vault: Path, rng: random.Random, markers: dict[str, str], tag: str) -> str:
    """Edit ~5% of the notes, add one, rename one, delete one; `markers` keeps each note's newest drill word."""
    paths = sorted(vault_notes(vault))
    edits = rng.sample(paths, max(3, len(paths) // 20))
    for i, rel in enumerate(edits):
        markers[rel] = f"drillmark{tag}e{i}"
        with open(vault / rel, "a", encoding="utf-8") as fh:
            fh.write(f"\n\nEdited by the drill: {markers[rel]}.\n")
    added, markers[f"concepts/drill added {tag}.md"] = f"concepts/drill added {tag}.md", f"drillmark{tag}a"
    (vault / "concepts").mkdir(exist_ok=True)
    (vault / added).write_text(f"# Drill added {tag}\n\nA new note: {markers[added]}.\n", encoding="utf-8")
    old, gone = rng.sample([p for p in paths if p not in edits], 2)
    os.rename(vault / old, vault / f"{old[:-3]} renamed {tag}.md")
    if old in markers:
        markers[f"{old[:-3]} renamed {tag}.md"] = markers.pop(old)
    (vault / gone).unlink()
    markers.pop(gone, None)
    return f"{len(edits)} edited, 1 added, 1 renamed, 1 deleted"


# --------------------------------------------------------------------------- rows


@dataclass
class Row:
    case: str
    tried: int = 0
    failed: int = 0
    lost: int = 0
    latency: Latency = field(default_factory=Latency)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: str | None = None

    def round(self, name: str, body: Callable[[], Outcome]) -> None:
        """One round: `body` gives (problems, lost, note); an exception, or a failed probe, fails the round."""
        before, start = len(self.latency.failures), time.monotonic()
        try:
            problems, lost, note = body()
        except Exception as exc:  # noqa: BLE001 - the drill goes on; the row says what broke
            problems, lost, note = [f"drill error: {type(exc).__name__}: {exc}"], 0, "error"
        if len(self.latency.failures) > before:
            problems.append(f"{len(self.latency.failures) - before} /health probes failed "
                            f"(first: {self.latency.failures[before]})")
        self.tried, self.failed, self.lost = self.tried + 1, self.failed + bool(problems or lost), self.lost + lost
        self.notes.append(f"{name}: {note}")
        self.problems += [f"{name}: {p}" for p in problems]
        log(f"{self.case} {name}: {'FAILED ' + '; '.join(problems) if problems or lost else 'ok'} ({note}; "
            f"{time.monotonic() - start:.0f} s)")

    def as_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k != "latency"}, **self.latency.summary()}


@dataclass
class Drill:
    root: Path
    quick: bool
    seed: int
    damages: list[str]

    def folder(self, name: str, sample: bool = False) -> Path:
        """A new folder of the temp root; with `sample`, a copy of the sample vault in it (`vault`)."""
        (self.root / name).mkdir(parents=True)
        if sample:
            shutil.copytree(SAMPLE_VAULT, self.root / name / "vault")
        return self.root / name


# --------------------------------------------------------------------------- case: kill -9


def case_kill(d: Drill) -> list[Row]:
    rounds, notes = (2, 150) if d.quick else (6, 400)
    work = d.folder("kill")
    generate_vault(work / "vault", notes, seed=d.seed, queries=10)
    rng, markers, row = random.Random(d.seed), {}, Row(f"kill -9 during import/follow ({notes} notes)")
    for r in range(rounds):
        row.round(f"round {r}", lambda r=r: kill_round(d, row.latency, r, work, rng, markers, notes))
    return [row]


def kill_round(d: Drill, sink: Latency, r: int, work: Path, rng: random.Random, markers: dict[str, str],
               notes: int) -> Outcome:
    """Round 0 kills the first import, odd rounds the following of edits and a draft, even ones the catch-up
    of edits made while it was down; then restart, wait for the import, stop, check, compare."""
    vault, env, acked, pre = work / "vault", _env(work, work / "vault"), {}, []
    mode = "first import" if r == 0 else "live" if r % 2 else "catch-up"
    what = mutate(vault, rng, markers, f"r{r}") if mode == "catch-up" else ""
    with Server(env, work, f"serve-{r}") as server:
        with Prober(server.url, sink) as probe:
            if mode == "live":
                pre = server.wait_done()
                what = mutate(vault, rng, markers, f"r{r}")
                threading.Thread(target=save_draft, args=(server.url, f"{r}s{d.seed}", acked), daemon=True).start()
            delay = rng.uniform(0.0, max(2.0, notes * 0.02) if r == 0 else 2.0)
            time.sleep(delay)
        server.kill9()
    note = f"{mode}{f' ({what})' if what else ''}, killed {delay:.1f} s in, phase " \
           f"{probe.last_phase}{', draft acknowledged' * bool(acked)}"
    with Server(env, work, f"serve-{r}-restart") as server, Prober(server.url, sink):
        problems = pre + server.wait_done()
    lost = [p for p, word in acked.items()
            if word not in ((vault / p).read_text(encoding="utf-8") if (vault / p).is_file() else "")]
    markers.update({p: w for p, w in acked.items() if p not in lost})
    wrong = compare(env, work, vault, markers)
    problems += check_ok(env, work)[0] + [f"draft acknowledged, then lost: {p}" for p in lost] + wrong[:5]
    return problems, len(wrong) + len(lost), note


def save_draft(url: str, tag: str, acked: dict[str, str]) -> None:
    """POST /drafts; an acknowledged draft goes into `acked` (path -> its word): it must not be lost."""
    body = {"markdown": f"---\ntitle: Drill Draft {tag}\n---\n# Drill Draft\n\nSaved by the drill: drafted{tag}.\n",
            "note_type": "concept"}
    try:
        answer = httpx.post(f"{url}/drafts", json=body, timeout=60, trust_env=False)
        if answer.status_code == 200:
            acked[answer.json()["path"]] = f"drafted{tag}"
    except httpx.HTTPError:
        pass                         # killed before it answered: nothing was promised


# --------------------------------------------------------------------------- case: damaged files


def _garble(paths: Any, rng: random.Random) -> None:
    for path in paths:
        with open(path, "r+b") as fh:
            fh.write(rng.randbytes(4096))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGES: dict[str, Callable[[Path, random.Random], Any]] = {   # name -> damage(data folder, rng)
    "notes-deleted": lambda data, rng: shutil.rmtree(data / "qdrant" / f"{PREFIX}_notes"),
    "chunk-pages": lambda data, rng: _garble((data / "qdrant" / f"{PREFIX}_chunks" / "segments").glob(
        "*/payload_storage/*.dat"), rng),
    "manifest-truncated": lambda data, rng: _truncate(data / "qdrant" / "mindnet.json"),
    "edges-wal": lambda data, rng: _garble((data / "qdrant" / f"{PREFIX}_edges" / "wal").glob("open-*"), rng),
    "embedding-cache": lambda data, rng: (data / "cache" / "embeddings.sqlite").write_bytes(rng.randbytes(8192)),
    "threads": lambda data, rng: (data / "threads.sqlite").write_bytes(b"SQLite format 3\0" + rng.randbytes(4096)),
}


def case_corrupt(d: Drill) -> list[Row]:
    base, row = d.folder("corrupt/base", sample=True), Row("damaged files")
    imported = cli(["ingest"], _env(base, base / "vault"), base)
    if imported.code != 0:
        row.round("base import", lambda: ([f"ingest exit {imported.code}: {imported.tail()}"], 0, "no index"))
        return [row]
    rng = random.Random(d.seed)
    for name in d.damages:
        row.round(name, lambda name=name: corrupt_round(base, name, rng, row.latency))
    return [row]


def corrupt_round(base: Path, name: str, rng: random.Random, sink: Latency) -> Outcome:
    folder = base.parent / name
    shutil.copytree(base, folder)
    vault, env = folder / "vault", _env(folder, folder / "vault")
    DAMAGES[name](folder / "data", rng)
    (vault / "concepts" / "drill after damage.md").write_text("# After the damage\n\nNew.\n", encoding="utf-8")
    runs = {a[0]: cli(a, env, folder) for a in (["check"], ["query", "Qdrant"])}
    problems = [f"{k} crashed (exit {r.code}): {r.tail()}" for k, r in runs.items() if r.crashed]
    more, health = serve_briefly(env, folder, sink, ui=name == "threads")     # the chat UI opens threads.sqlite
    said = [r.out for r in runs.values()] + health.get("problems", [])
    repaired, report = repair(env, folder, said)
    problems += more + ([] if repaired else [f"not repaired: {report.get('tail', '')}"])
    lost = abs(len(vault_notes(vault)) - report.get("notes", 0)) if repaired else 0
    codes = ", ".join(f"{k} exit {r.code}" for k, r in runs.items())
    said_health = f"{health.get('status')} ({len(health.get('problems', []))} problems)" if health else "none"
    return problems, lost, f"{codes}, /health {said_health}, repaired by `mindnet {repaired}`"


def repair(env: dict[str, str], folder: Path, said: list[str]) -> tuple[str | None, dict]:
    """A plain `ingest`; when `check` still fails and a message named `ingest --full`, that: the command that
    repaired the index (None: neither) and the last check's report."""
    for args in (["ingest"], ["ingest", "--full"]):
        run = cli(args, env, folder)
        problems, report = check_ok(env, folder)
        if not run.crashed and run.code == 0 and not problems:
            return " ".join(args), report
        said += [run.out, *problems]
        if "ingest --full" not in " ".join(" ".join(said).split()):
            break
    return None, {"tail": f"{' '.join(args)} exit {run.code}; {problems}"}


# --------------------------------------------------------------------------- case: full disk


def case_disk(d: Drill) -> list[Row]:
    tmpfs, limit = Row("disk full (400 MB tmpfs)"), Row("disk full (MINDNET_MIN_FREE_MB)")
    folder = d.folder("disk-tmpfs", sample=True)
    (folder / "data").mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400m,mode=0755", "tmpfs", str(folder / "data")],
                           capture_output=True, text=True, timeout=30) if os.geteuid() == 0 else None
    if mount is None or mount.returncode != 0:
        tmpfs.skipped = "skipped (needs root)" + (f": {mount.stderr.strip()}" if mount else "")
    else:
        try:
            tmpfs.round("tmpfs", lambda: disk_tmpfs(folder, tmpfs.latency))
        finally:
            subprocess.run(["umount", "-l", str(folder / "data")], capture_output=True, timeout=30)
    limit.round("limit", lambda: disk_limit(d.folder("disk-limit", sample=True), d.seed))
    return [tmpfs, limit]


def stopped_for_space(env: dict[str, str], cwd: Path) -> list[str]:
    """`ingest` must stop with exit 2 and name MINDNET_MIN_FREE_MB; then `check` and `query` must not crash."""
    run = cli(["ingest"], env, cwd)
    out = [] if run.code == 2 and "MINDNET_MIN_FREE_MB" in run.out and not run.crashed else \
        [f"ingest on a full disk: exit {run.code} (want 2 and MINDNET_MIN_FREE_MB): {run.tail()}"]
    runs = {a[0]: cli(a, env, cwd) for a in (["check"], ["query", "Qdrant"])}
    return out + [f"{k} crashed (exit {r.code}): {r.tail()}" for k, r in runs.items() if r.crashed]


def finishes(env: dict[str, str], cwd: Path) -> tuple[list[str], int]:
    """With space: `ingest` and `check` succeed; the notes the index lacks."""
    run = cli(["ingest"], env, cwd)
    problems, report = check_ok(env, cwd)
    problems = ([f"ingest exit {run.code}: {run.tail()}"] if run.code != 0 else []) + problems
    return problems, abs(len(vault_notes(Path(env["MINDNET_VAULT_ROOT"]))) - report.get("notes", 0))


def disk_tmpfs(folder: Path, sink: Latency) -> Outcome:
    data = folder / "data"
    env = _env(folder, folder / "vault", RUST_BACKTRACE="0")
    with open(data / ".filler", "wb", buffering=0) as fh:     # all but 275 MB: 256 kept free, 19 to write into
        left = shutil.disk_usage(data).free - 275 * MB
        while left > 0:
            left -= fh.write(b"\0" * min(left, 8 * MB))
    problems = stopped_for_space(env, folder) + serve_briefly(env, folder, sink)[0]
    (data / ".filler").unlink()
    more, lost = finishes(env, folder)
    return problems + more, lost, "ingest stopped at 275 MB free; finished once the filler was removed"


def disk_limit(folder: Path, seed: int) -> Outcome:
    env = _env(folder, folder / "vault", MINDNET_MIN_FREE_MB="0")
    if (first := cli(["ingest"], env, folder)).code != 0:
        return [f"first ingest exit {first.code}: {first.tail()}"], 0, "no index"
    mutate(folder / "vault", random.Random(seed), {}, "disk")
    above = shutil.disk_usage(folder).free / MB + 1024
    problems = stopped_for_space({**env, "MINDNET_MIN_FREE_MB": f"{above:.0f}"}, folder)
    more, lost = finishes(env, folder)
    return problems + more, lost, f"limit {above / 1024:.0f} GB stopped it; limit 0 finished it"


# --------------------------------------------------------------------------- case: hostile notes


HOSTILE = {
    "brackets.md": lambda: "[" * 120_000,
    "link-openers.md": lambda: "[x](" * 100_000,
    "headings.md": lambda: "".join(f"# h{i}\n" for i in range(16_000)),
    "tags.md": lambda: " ".join(f"#t{i}" for i in range(20_000)),
    "two-megabytes.md": lambda: "".join(f"Paragraph {i}: " + " ".join(f"word{(i * 7 + j) % 5000}" for j in range(60))
                                        + "\n\n" for i in range(4300))[:1_990_000],   # max_file_bytes: 2,000,000
}


def case_hostile(d: Drill) -> list[Row]:
    work, row, markers = d.folder("hostile", sample=True), Row("hostile notes while serving"), {}
    env = _env(work, work / "vault")
    with Server(env, work, "serve") as server:
        if problems := server.wait_done():
            raise RuntimeError(f"the first import: {problems}")
        for r in range(1 if d.quick else 2):
            row.round(f"round {r}", lambda r=r: hostile_round(server, work / "vault", r, markers, row.latency))
    wrong = compare(env, work, work / "vault", markers, plan=False)
    if problems := check_ok(env, work)[0] + wrong[:5]:
        row.failed, row.lost = row.failed + 1, row.lost + len(wrong)
        row.problems += [f"after the server stopped: {p}" for p in problems]
    return [row]


def hostile_round(server: Server, vault: Path, r: int, markers: dict[str, str], sink: Latency) -> Outcome:
    word, rel = f"Quittenbrot{r}drill", f"concepts/drill-normal-{r}.md"
    with Prober(server.url, sink):
        (vault / "hostile").mkdir(exist_ok=True)
        for name, text in HOSTILE.items():
            (vault / "hostile" / name).write_text(text() + f"\n\nround {r}\n", encoding="utf-8")
        saved, markers[rel] = time.monotonic(), word
        (vault / rel).write_text(f"# Drill normal {r}\n\nDer {word} steht hier.\n", encoding="utf-8")
        found = _until(lambda: any(h.get("path") == rel for h in query_hits(server.url, word) or []),
                       FIND_BOUND_S, every=0.5)
        took = time.monotonic() - saved
        problems = server.wait_done(settle=2.0)
    problems += [] if found else [f"the normal note was not found within {FIND_BOUND_S:.0f} s"]
    return problems, int(not found), f"normal note found after {took:.1f} s (bound {FIND_BOUND_S:.0f} s)"


# --------------------------------------------------------------------------- case: load during a rebuild


def case_rebuild(d: Drill) -> list[Row]:
    notes, work = 300 if d.quick else 1000, d.folder("rebuild")
    queries = [q for q, _ in generate_vault(work / "vault", notes, seed=d.seed, queries=40).queries]
    row = Row(f"queries during a full rebuild ({notes} notes, 8 clients)")
    row.round("rebuild", lambda: rebuild_round(work, queries, row.latency))
    return [row]


def rebuild_round(work: Path, queries: list[str], sink: Latency) -> Outcome:
    env = _env(work, work / "vault")
    if (first := cli(["ingest"], env, work)).code != 0:
        return [f"first ingest exit {first.code}: {first.tail()}"], 0, "no index"
    answers: list[tuple[str, float]] = []          # (what a query got, seconds), from every client
    stop = threading.Event()
    with Server(env, work, "serve") as server:
        problems = server.wait_done()
        clients = [threading.Thread(target=client, args=(server.url, queries[i::8], stop, answers), daemon=True)
                   for i in range(8)]
        with Prober(server.url, sink):
            for c in clients:
                c.start()
            time.sleep(1.0)
            t0 = time.monotonic()
            problems += post_full(server.url)
            took = time.monotonic() - t0
            time.sleep(1.0)
            stop.set()
            for c in clients:
                c.join(timeout=SLOW_QUERY_S + 10)
            problems += server.wait_done()
        empty = [q for q in queries if not query_hits(server.url, q)]
    problems += [f"{len(empty)} of {len(queries)} queries without hits after the rebuild"] * bool(empty)
    wrong = compare(env, work, work / "vault", {})
    bad = [f"query got {kind} after {s:.1f} s" for kind, s in answers
           if kind not in ("200", "503+Retry-After") or s > SLOW_QUERY_S]
    got = ", ".join(f"{k} x{v}" for k, v in sorted(Counter(k for k, _ in answers).items()))
    return (bad[:3] + problems + check_ok(env, work)[0] + wrong[:5], len(wrong),
            f"rebuild {took:.1f} s; {len(answers)} queries: {got}; slowest {max(s for _, s in answers):.1f} s"
            + f"; {len(bad)} bad" * bool(bad))


def post_full(url: str) -> list[str]:
    """POST /ingest {"full": true}, again while another import runs (409, for up to 2 minutes)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            r = httpx.post(f"{url}/ingest", json={"full": True}, timeout=CLI_TIMEOUT, trust_env=False)
        except httpx.HTTPError as exc:
            return [f"POST /ingest failed: {type(exc).__name__}: {exc}"]
        if r.status_code == 200:
            return []
        if r.status_code != 409 or time.monotonic() > deadline:
            return [f"POST /ingest answered {r.status_code}: {r.text[:300]}"]
        time.sleep(0.5)


def client(url: str, queries: list[str], stop: threading.Event, answers: list[tuple[str, float]]) -> None:
    """POST /query in a loop until `stop`; each answer's kind and seconds go into `answers`."""
    with httpx.Client(trust_env=False, timeout=SLOW_QUERY_S + 5) as http:
        for i in range(10 ** 9):
            if stop.is_set():
                return
            t0 = time.monotonic()
            try:
                r = http.post(f"{url}/query", json={"query": queries[i % len(queries)], "mode": "hybrid"})
                kind = "200" if r.status_code == 200 else "503+Retry-After" if (
                    r.status_code == 503 and r.headers.get("Retry-After")) else f"status {r.status_code}"
            except httpx.HTTPError as exc:
                kind = type(exc).__name__
            answers.append((kind, time.monotonic() - t0))
            if kind != "200":
                stop.wait(0.2)


# --------------------------------------------------------------------------- output


CASES: dict[str, Callable[[Drill], list[Row]]] = {"kill": case_kill, "corrupt": case_corrupt, "disk": case_disk,
                                                  "hostile": case_hostile, "rebuild": case_rebuild}


def table(rows: list[Row]) -> str:
    lines = ["| case | tried | failed | lost | /health p50 ms | p99 ms | max ms | probes |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        s = row.latency.summary()
        cells = [row.skipped, "", ""] if row.skipped else [row.tried, row.failed, row.lost]
        lat = [s["p50_ms"], s["p99_ms"], s["max_ms"], s["probes"]] if s["probes"] else ["-", "-", "-", 0]
        lines.append("| " + " | ".join(str(c) for c in [row.case, *cells, *lat]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.drill", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, smaller vaults (a few minutes)")
    parser.add_argument("--out", type=Path, help="also write the rows as JSON to this file")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--damage", nargs="+", choices=list(DAMAGES), default=list(DAMAGES),
                        help="corrupt: the damaged files to try (default: all)")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="mindnet-drill-"))
    drill, rows, start = Drill(root, args.quick, args.seed, args.damage), [], time.monotonic()
    try:
        for name in args.cases:
            log(f"case {name}")
            try:
                rows += CASES[name](drill)
            except Exception as exc:  # noqa: BLE001 - a case that could not run is a failed row
                rows.append(Row(name, tried=1, failed=1, problems=[f"drill error: {type(exc).__name__}: {exc}"]))
    finally:
        for proc in list(_CHILDREN):         # no stray servers, whatever happened
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    load = os.getloadavg()
    sys.stdout.write(f"mindnet drill ({'quick' if args.quick else 'default'}, seed {args.seed}, embedding "
                     f"hash-benchmark, {os.cpu_count()} cores, load {load[0]:.1f}, {time.monotonic() - start:.0f} s)"
                     f"\n\n{table(rows)}\n\n")
    for row in rows:
        sys.stdout.write("".join(f"  {row.case} - {line}\n" for line in row.notes + [f"FAILED {p}" for p in
                                                                                    row.problems]))
    if args.out:
        args.out.write_text(json.dumps([r.as_dict() for r in rows], indent=1, ensure_ascii=False), encoding="utf-8")
    return 1 if any(r.failed for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
