"""Benchmark of Save & Analyze: link prediction, relation kinds, latency. Prints figures; asserts nothing.

    python -m benchmarks.bench_analyze [--sample] [--musique FOLDER] [--kinds] [--latency]
                                               [--seeds 3] [--share 0.2] [--work DIR]

Link prediction: from a copy of the vault, remove `share` of the explicit links (a note -> note pair; a wikilink
in prose becomes its plain text, a typed relation or callout link is deleted), import the copy, analyse every
note that lost a link and count the removed targets among its top 5 link suggestions (recall@5, precision@5),
beside a plain-vector-neighbours baseline: the notes nearest to the note's stored chunk vectors, with the same
exclusions (the note itself and the notes it still links). MuSiQue-100 has no links: each question's hop
decomposition ("... #1 ...") becomes a link from the passage of hop 1 to that of the hop using it, anchored on
the target's title or the bridge answer where the passage names it, else appended as "See also".
Relation kinds: every typed link of the sample vault (`[[rel:KIND X]]`, callouts) with the kind hidden.
Latency: one analysis of a 2,000-word draft (nothing cached, then again cached) and of an existing note.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mindnet.analysis.models import Span
from mindnet.analysis.relations import RelationRules
from mindnet.evaluation.beir import load_beir, note_filenames, render_note
from mindnet.indexing.edges import LinkResolver
from mindnet.service import Mindnet
from mindnet.settings import SAMPLE_VAULT, Settings
from mindnet.vault.links import CALLOUT_KIND, CALLOUT_START, REL_PREFIX, WIKILINK, extract_links, mask_code
from mindnet.vault.scan import scan_vault

EXPLICIT = ("explicit:wikilink", "explicit:embed", "inline:rel", "callout:edge")
K = 5


# --------------------------------------------------------------------------- vaults with explicit links


def sample_files() -> dict[str, str]:
    out = {}
    for path in sorted(SAMPLE_VAULT.rglob("*.md")):
        rel = path.relative_to(SAMPLE_VAULT).as_posix()
        if not any(part.startswith(".") for part in Path(rel).parts):
            out[rel] = path.read_text(encoding="utf-8")
    return out


def _anchor(text: str, names_: list[str]) -> re.Match[str] | None:
    for name in names_:
        if name and len(name) >= 3:
            m = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE)
            if m:
                return m
    return None


def musique_files(folder: Path) -> dict[str, str]:
    """The corpus as notes, with one link per hop dependency of each question (see the module docstring)."""
    data = load_beir(folder)
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip()]
    pairs: dict[tuple[str, str], str] = {}
    for q in queries:
        hops = q.get("decomposition") or []
        for j, hop in enumerate(hops):
            for k in {int(n) for n in re.findall(r"#(\d+)", hop.get("q", ""))}:
                if 1 <= k <= len(hops) and k - 1 != j:
                    src, dst = hops[k - 1].get("gold_id"), hop.get("gold_id")
                    if src and dst and src != dst and src in data.corpus and dst in data.corpus:
                        pairs.setdefault((src, dst), str(hops[k - 1].get("a") or ""))
    texts = {doc_id: doc.text for doc_id, doc in data.corpus.items()}
    see_also: dict[str, list[str]] = defaultdict(list)
    for (src, dst), answer in sorted(pairs.items()):
        target = data.corpus[dst]
        m = _anchor(texts[src], [target.title, answer])
        if m and "[[" not in texts[src][max(0, m.start() - 2):m.end() + 2]:
            texts[src] = f"{texts[src][:m.start()]}[[{dst}|{m.group(0)}]]{texts[src][m.end():]}"
        else:
            see_also[src].append(f"[[{dst}|{target.title}]]")
    files = {}
    names = note_filenames(list(data.corpus.values()))
    for doc_id, doc in data.corpus.items():
        body = texts[doc_id] + (f"\n\nSee also: {', '.join(see_also[doc_id])}" if see_also[doc_id] else "")
        files[names[doc_id]] = render_note(type(doc)(id=doc.id, title=doc.title, text=body))
    return files


def write_files(root: Path, files: dict[str, str]) -> None:
    if root.exists():
        shutil.rmtree(root)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- removing links


def explicit_pairs(root: Path, settings: Settings) -> tuple[dict[str, set[str]], dict[str, str], LinkResolver]:
    """note path -> ids of the notes it links explicitly; note id -> path; the resolver."""
    notes, _ = scan_vault(root, settings.types)
    resolver = LinkResolver(notes)
    out: dict[str, set[str]] = {}
    for note in notes:
        targets = {resolver.resolve(r.target) for r in extract_links(note.body) if r.rule_id in EXPLICIT}
        targets = {t for t in targets if t and t != note.note_id}
        if targets:
            out[note.path] = targets
    return out, {n.note_id: n.path for n in notes}, resolver


def remove_links(text: str, targets: set[str], resolver: LinkResolver) -> str:
    """Unlink every link of `text` to `targets`: prose wikilinks keep their shown text, typed relations, embeds
    and callout links go."""
    masked = mask_code(text).split("\n")
    lines = text.split("\n")
    out = []
    in_callout = False
    for raw, seen in zip(lines, masked, strict=True):
        if seen != raw and not seen.strip():        # inside a code block: untouched
            out.append(raw)
            continue
        start = CALLOUT_START.match(raw)
        in_callout = bool(start) or (in_callout and raw.lstrip().startswith(">"))

        def unlink(m: re.Match[str], callout: bool = in_callout) -> str:
            inner = m.group(2).strip()
            rel = REL_PREFIX.match(inner)
            target = (rel.group(2) if rel else inner).split("|", 1)[0].split("#", 1)[0].strip()
            if resolver.resolve(target) not in targets:
                return m.group(0)
            if rel or callout or m.group(1):
                return ""
            shown = inner.split("|", 1)[1] if "|" in inner else inner.split("#", 1)[0]
            return shown.strip()

        new = WIKILINK.sub(unlink, raw)
        if in_callout and not start and new != raw:
            kind = CALLOUT_KIND.match(new.lstrip()[1:])
            if kind and not WIKILINK.search(kind.group(2)):
                continue                              # a continuation line left without links
        out.append(new)
    return "\n".join(out)


# --------------------------------------------------------------------------- link prediction


@dataclass
class Tally:
    hits: Counter = field(default_factory=Counter)
    shown: Counter = field(default_factory=Counter)
    removed: int = 0
    notes: int = 0

    def add(self, name: str, predicted: list[str], gold: set[str]) -> None:
        top = predicted[:K]
        self.hits[name] += len(set(top) & gold)
        self.shown[name] += len(top)

    def row(self, name: str) -> dict[str, float]:
        return {"recall@5": self.hits[name] / max(1, self.removed),
                "precision@5": self.hits[name] / max(1, K * self.notes)}


def neighbours_baseline(m: Mindnet, path: str) -> list[str]:
    """Plain vector neighbours: the notes nearest to the note's stored chunk vectors (max cosine per note)."""
    an = m.analyzer
    source = an.source(text=None, note=path)
    chunks = an.catalog().notes[source.indexed.note_id].chunk_ids
    stored = an._stored_vectors(chunks)
    best: dict[str, float] = {}
    for _, vec, _ in stored.values():
        for r in m.store.search_dense(vec, 50, payload=["note_id"]):
            nid = str(r.payload.get("note_id"))
            if nid not in source.excluded:
                best[nid] = max(best.get(nid, -1.0), float(r.score))
    return sorted(best, key=lambda n: -best[n])


def link_prediction(name: str, files: dict[str, str], base: Settings, work: Path, seeds: list[int],
                    share: float, log: Callable[[str], None]) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    full = work / "vault-links"
    write_files(full, files)
    pairs, _, resolver = explicit_pairs(full, base)
    all_pairs = sorted((src, dst) for src, dsts in pairs.items() for dst in dsts)
    log(f"{name}: {len(files)} notes, {len(all_pairs)} explicit note->note links in {len(pairs)} notes")
    tally = Tally()
    per_seed = []
    for seed in seeds:
        rng = random.Random(seed)
        removed = rng.sample(all_pairs, max(1, round(share * len(all_pairs))))
        by_note: dict[str, set[str]] = defaultdict(set)
        for src, dst in removed:
            by_note[src].add(dst)
        cut = {rel: (remove_links(text, by_note[rel], resolver) if rel in by_note else text)
               for rel, text in files.items()}
        vault = work / f"vault-{seed}"
        write_files(vault, cut)
        settings = base.model_copy(update={"vault_root": vault, "qdrant_path": work / "qdrant",
                                           "collection_prefix": f"lp{seed}", "qdrant_url": None})
        m = Mindnet(settings)
        try:
            t0 = time.perf_counter()
            report = m.ingest(vault, full=True)
            log(f"  seed {seed}: removed {len(removed)} links from {len(by_note)} notes; import "
                f"{report.notes} notes, {report.embedded_texts} embedded, {time.perf_counter() - t0:.0f} s")
            seed_tally = Tally()
            for rel, gold in sorted(by_note.items()):
                still = an_source_linked(m, rel)
                gold = gold - still          # a pair linked twice (prose + callout) may survive in part: not asked
                if not gold:
                    continue
                result = m.analyze(note=rel, llm=False, limit=K)
                ranked = {
                    "mindnet": [s.note_id for s in result.links],
                    "related only": [r.note_id for r in result.related],
                    "mentions only": [s.note_id for s in result.links if "mention" in s.sources],
                    "vector neighbours": neighbours_baseline(m, rel),
                }
                for t in (tally, seed_tally):
                    t.removed += len(gold)
                    t.notes += 1
                    for key, pred in ranked.items():
                        t.add(key, pred, gold)
            per_seed.append({"seed": seed, "removed": seed_tally.removed, "notes": seed_tally.notes,
                             **{k: seed_tally.row(k) for k in seed_tally.hits}})
        finally:
            m.close()
    return {"dataset": name, "links": len(all_pairs), "removed": tally.removed, "notes": tally.notes,
            "seeds": seeds, "methods": {k: tally.row(k) for k in ("mindnet", "related only", "mentions only",
                                                                   "vector neighbours")},
            "per_seed": per_seed}


def an_source_linked(m: Mindnet, rel: str) -> set[str]:
    return m.analyzer.source(text=None, note=rel).linked


# --------------------------------------------------------------------------- relation kinds


def _untyped(m: re.Match[str]) -> str:
    rel = REL_PREFIX.match(m.group(2).strip())
    return f"[[{rel.group(2)}]]" if rel else m.group(0)


def hide_kinds(body: str) -> str:
    """`[[rel:KIND X]]` -> `[[X]]`; a callout `> [!edge] KIND: [[A]]` (and `> KIND: ...`) -> `[[A]]`."""
    out = []
    in_callout = False
    for line in body.split("\n"):
        start = CALLOUT_START.match(line)
        in_callout = bool(start) or (in_callout and line.lstrip().startswith(">"))
        if in_callout:
            rest = start.group(1) if start else line.lstrip()[1:]
            kind = CALLOUT_KIND.match(rest)
            line = kind.group(2) if kind else rest
        out.append(WIKILINK.sub(_untyped, line))
    return "\n".join(out)


def relation_kinds(settings: Settings) -> dict:
    notes, _ = scan_vault(SAMPLE_VAULT, settings.types)
    resolver = LinkResolver(notes)
    by_id = {n.note_id: n for n in notes}
    rules = RelationRules(settings.analysis.relations, settings.types)
    no_cues = RelationRules(settings.analysis.relations.model_copy(update={"cues": {}, "type_pairs": []}),
                            settings.types)
    no_pairs = RelationRules(settings.analysis.relations.model_copy(update={"type_pairs": []}), settings.types)
    items = []
    for note in notes:
        typed = [(resolver.resolve(r.target), r.kind) for r in extract_links(note.body)
                 if r.rule_id in ("inline:rel", "callout:edge")]
        hidden = hide_kinds(note.body)
        for target, kind in typed:
            if not target or target == note.note_id:
                continue
            spans = [Span(start=m.start(), end=m.end(), line=1, surface=m.group(0)) for m in WIKILINK.finditer(hidden)
                     if resolver.resolve(m.group(2).split("|")[0].split("#")[0].strip()) == target]
            args = {"text": hidden, "spans": spans, "source_type": note.type, "target_type": by_id[target].type}
            items.append((kind, rules.classify(**args), no_cues.classify(**args), no_pairs.classify(**args)))
    n = len(items)
    by_rule = Counter(r.rule for _, r, _, _ in items)
    right_by_rule = Counter(r.rule for k, r, _, _ in items if r.kind == k)
    majority = Counter(k for k, _, _, _ in items).most_common(1)[0]
    return {"links": n, "accuracy": sum(r.kind == k for k, r, _, _ in items) / n,
            "without_type_pairs": sum(c.kind == k for k, _, _, c in items) / n,
            "edge_defaults_only": sum(b.kind == k for k, _, b, _ in items) / n,
            "majority": {"kind": majority[0], "accuracy": majority[1] / n},
            "by_rule": {rule: f"{right_by_rule[rule]}/{by_rule[rule]}" for rule in by_rule},
            "kinds": dict(Counter(k for k, _, _, _ in items))}


# --------------------------------------------------------------------------- latency


def latency(base: Settings, work: Path, runs: int = 3) -> dict:
    settings = base.model_copy(update={"vault_root": SAMPLE_VAULT, "qdrant_path": work / "qdrant-latency",
                                       "collection_prefix": "lat", "qdrant_url": None})
    notes, _ = scan_vault(SAMPLE_VAULT, settings.types)
    words: list[str] = []
    for n in sorted(notes, key=lambda n: n.path):
        words += re.sub(r"\[\[|\]\]", "", n.body).split()
    words = (words * 3)[:2000]
    paragraphs = [" ".join(words[i:i + 80]) for i in range(0, 2000, 80)]
    m = Mindnet(settings)
    try:
        m.ingest(SAMPLE_VAULT)
        m.analyze(note="concepts/qdrant.md", llm=False)        # loads the catalog and the link graph
        cold, cold_cpu, warm, stages = [], [], [], []
        for run in range(runs):
            nonce = f"lauf{time.time_ns()}x{run}"
            draft = "\n\n".join(f"{p} {nonce}" for p in paragraphs)
            t, c = time.perf_counter(), time.process_time()
            r = m.analyze(text=draft, llm=False)
            cold.append(1000 * (time.perf_counter() - t))
            cold_cpu.append(1000 * (time.process_time() - c))   # all threads: on a machine shared by others the
            # wall time measures the others too, the CPU time measures this call
            stages.append(r.timing_ms)
            t = time.perf_counter()
            m.analyze(text=draft, llm=False)
            warm.append(1000 * (time.perf_counter() - t))
        longest = max(notes, key=lambda n: len(n.body.split()))
        note_ms = []
        for _ in range(runs):
            t = time.perf_counter()
            m.analyze(note=longest.path, llm=False)
            note_ms.append(1000 * (time.perf_counter() - t))
    finally:
        m.close()
    return {"draft_words": len(draft.split()), "chunks": r.source.chunks, "embedded": r.source.embedded,
            "cold_ms_median": statistics.median(cold), "cold_ms": [round(x) for x in cold],
            "cold_cpu_ms_median": statistics.median(cold_cpu), "cold_cpu_ms": [round(x) for x in cold_cpu],
            "cached_ms_median": statistics.median(warm),
            "stages_ms_of_first_cold": stages[0],
            "note": longest.path, "note_words": len(longest.body.split()), "note_ms_median": statistics.median(note_ms),
            "load_average": os.getloadavg(), "omp_threads": os.environ.get("OMP_NUM_THREADS", "(default)")}


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sample", action="store_true", help="link prediction on the sample vault")
    p.add_argument("--musique", type=Path, help="link prediction on MuSiQue-100 (BEIR folder) with links added")
    p.add_argument("--kinds", action="store_true", help="relation-kind accuracy on the sample vault")
    p.add_argument("--latency", action="store_true", help="latency of one analysis of a 2,000-word draft")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--share", type=float, default=0.2)
    p.add_argument("--work", type=Path, default=Path("data/bench-analyze"))
    args = p.parse_args(argv)
    base = Settings.from_env()
    seeds = list(range(1, args.seeds + 1))
    out: dict = {"embedding": base.embedding}

    def log(line: str) -> None:
        print(line, flush=True)

    if args.kinds:
        out["relation_kinds"] = relation_kinds(base)
        log(json.dumps(out["relation_kinds"], ensure_ascii=False))
    if args.sample:
        out["sample"] = link_prediction("sample vault", sample_files(), base, args.work / "sample", seeds,
                                        args.share, log)
    if args.musique:
        out["musique"] = link_prediction("MuSiQue-100", musique_files(args.musique), base, args.work / "musique",
                                         seeds, args.share, log)
    for key in ("sample", "musique"):
        if key in out:
            r = out[key]
            log(f"\n{r['dataset']}: {r['links']} links, removed {r['removed']} in {r['notes']} notes "
                f"over seeds {r['seeds']} (share {args.share})")
            log(f"  {'method':<20} {'recall@5':>9} {'precision@5':>12}")
            for name, row in r["methods"].items():
                log(f"  {name:<20} {row['recall@5']:>9.3f} {row['precision@5']:>12.3f}")
    if args.latency:
        out["latency"] = latency(base, args.work)
        log(json.dumps(out["latency"]))
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "results.json").write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
