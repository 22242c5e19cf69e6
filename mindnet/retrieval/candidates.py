"""Candidate generation for `MindnetRetriever`: the chunks a query's dense and sparse searches find, their BM25
share, the notes reached only through the graph, and the full payload of the ones about to be shown.

Every search is the engine's (`Store`); nothing here ranks: `fusion.py` turns the scores into S_sem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mindnet.indexing.sparse import SparseBatch
from mindnet.retrieval.graph import LinkGraph, Subgraph
from mindnet.store.collections import BRIEF_FIELDS, WITHOUT_DENSE
from mindnet.store.engine import Fields, Record, SearchParams, Sparse, Store, Where

# a dense search restricted to a few hundred chunks scores each of them: exact (HNSW with a filter may skip some)
EXACT = SearchParams(exact=True)


@dataclass
class Candidate:
    point_id: str
    payload: dict
    vector: np.ndarray | None = None    # read only for several query vectors (`Pool.cosines`)
    dense: float = 0.0
    lexical: float = 0.0
    via_graph: bool = False
    semantic: float = 0.0
    embedded: bool = True           # False: the import has not added its dense vector yet (phase 2)
    brief: bool = False             # payload holds only the ranking fields (BRIEF_FIELDS); read in full when shown
    other_language: bool = False    # its note is in another language than the question: BM25 counted at least
                                    # at the dense share


def unit(v: Any) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    n = float(np.linalg.norm(a))
    return a / n if n else a


class Pool:
    """The candidates of one search by point id, in the order they were found (the first search to find a chunk
    keeps it), with the sparse queries that were run and each one's best BM25 score."""

    def __init__(self, brief: Callable[[str], dict | None] | None = None) -> None:
        self.cands: dict[str, Candidate] = {}
        self.sparse_queries: list[Sparse] = []
        self.lexical_max: list[float] = []
        # a chunk's ranking fields by point id (the link graph's `brief_of`): the searches then read no payload,
        # whose conversion from the engine cost more than a depth-1 query's sparse search (~2 ms per 50 hits)
        self.brief = brief
        self.fields: Fields = False if brief is not None else BRIEF_FIELDS
        self.scored: set[str] = set()      # candidates whose dense score is final
        self.vectors = False               # the searches read the hits' dense vectors (several query vectors)

    def briefed(self, store: Store, records: list[Record]) -> list[Record]:
        """`records` with their ranking fields from `brief`; those it does not know (written after the link graph
        was built) read from the engine, in one call."""
        if self.brief is None:
            return records
        unknown = []
        for r in records:
            if r.id not in self.cands:
                found = self.brief(r.id)
                if found is None:
                    unknown.append(r.id)
                else:
                    r.payload = found
        if unknown:
            read = {x.id: x.payload for x in store.retrieve("chunks", unknown, payload=BRIEF_FIELDS)}
            for r in records:
                r.payload = read.get(r.id, r.payload)
        return records

    def add(self, records: list[Record], dense_scores: bool = False) -> None:
        """`dense_scores`: the records come from the only dense search, so a record's score is its cosine."""
        for r in records:
            if r.id in self.cands or "chunk_id" not in r.payload:
                continue   # (no payload: deleted since it was found)
            c = Candidate(r.id, r.payload, unit(r.dense) if r.dense is not None else None, brief=True)
            if dense_scores:
                c.dense = float(r.score)
                self.scored.add(r.id)
            self.cands[r.id] = c

    def search_dense(self, store: Store, dense_vecs: list[np.ndarray], limit: int, flt: Where | None,
                     params: SearchParams) -> None:
        """With one dense query a hit's own score is its cosine. With several, every hit's vector is read (and
        every BM25 hit's) and `cosines` scores it against each: a restricted search per query vector over all the
        candidates cost more (20 query vectors, a note's chunks in Save & Analyze at 30,000 notes: 850-930 ms
        against 635-655 ms this way)."""
        self.vectors = len(dense_vecs) > 1
        for vec in dense_vecs:
            self.add(self.briefed(store, store.search_dense(vec, limit, flt, payload=self.fields, dense=self.vectors,
                                                            params=params)), dense_scores=not self.vectors)

    def search_sparse(self, store: Store, encoded: SparseBatch, limit: int,
                      flt: Where | None) -> None:
        """BM25 search for every encoded query (`SparseEncoder.encode_queries`), then every candidate's BM25 share."""
        indices, values = encoded
        for idx, val in zip(indices, values, strict=True):
            if not idx:
                continue
            sv = Sparse(idx, val)
            hits = self.briefed(store, store.search_sparse(sv, limit, flt, payload=self.fields, dense=self.vectors))
            self.add(hits)
            self.sparse_queries.append(sv)
            self.lexical_max.append(max((h.score for h in hits), default=0.0))
        lexical_scores(store, list(self.cands.values()), self.sparse_queries, self.lexical_max, flt)

    def cosines(self, store: Store, dense_vecs: list[np.ndarray]) -> None:
        """The dense score of the candidates no dense search scored: the best cosine over the query vectors, of
        their vectors when read (several query vectors), else (BM25 hits of a single query vector) from one exact
        dense search restricted to them (the engine's cosines: ~0.3 ms for 50 BM25 hits, reading their vectors
        ~0.8 ms). A candidate without a vector has none yet (phase 2 of an import has not embedded it)."""
        matrix = np.stack(dense_vecs)
        todo = []
        for pid, c in self.cands.items():
            if pid in self.scored:
                continue
            if c.vector is not None:
                c.dense = float(np.max(matrix @ c.vector))
            elif self.vectors:
                c.embedded = False      # read with its vector: it has none
            else:
                todo.append(pid)
        if todo:
            best: dict[str, float] = {}
            for vec in dense_vecs:
                for r in store.search_dense(vec, len(todo), Where(ids=tuple(todo)), params=EXACT):
                    best[r.id] = max(best.get(r.id, -1.0), float(r.score))
            for pid in todo:
                self.cands[pid].dense = best.get(pid, 0.0)
                self.cands[pid].embedded = pid in best
        self.scored.update(self.cands)


def lexical_scores(store: Store, cands: list[Candidate], sparse_queries: list[Sparse], lexical_max: list[float],
                   flt: Where | None) -> None:
    """BM25 of every candidate for every sparse query (one query restricted to the candidates each),
    normalised by the query's best score, so dense-only hits get their lexical share too."""
    if not cands:
        return
    by_id = {c.point_id: c for c in cands}
    shares = lexical_shares(store, len(by_id), sparse_queries, lexical_max, Where(ids=tuple(by_id)).and_(flt))
    for pid, share in shares.items():
        by_id[pid].lexical = max(by_id[pid].lexical, share)


def lexical_shares(store: Store, limit: int, sparse_queries: list[Sparse], lexical_max: list[float],
                   where: Where) -> dict[str, float]:
    """The best normalised BM25 (score / the query's best, at most 1) of the (at most `limit`) chunks `where`
    selects, over the sparse queries; chunks no query matches are left out."""
    shares: dict[str, float] = {}
    if not limit:
        return shares
    for sv, top in zip(sparse_queries, lexical_max, strict=True):
        if top <= 0:
            continue
        for r in store.search_sparse(sv, limit, where):
            share = min(1.0, r.score / top)
            if share > shares.get(r.id, 0.0):
                shares[r.id] = share
    return shares


def graph_candidates(store: Store, graph: LinkGraph, subgraph: Subgraph, cands: dict[str, Candidate],
                     flt: Where | None, dense_vecs: list[np.ndarray], pool: Pool, *, max_nodes: int,
                     unembedded_chunks: bool) -> list[Candidate]:
    """The best chunk of every note reached only through the graph, scored against the query. The engine
    scores every chunk of those notes (a dense search restricted to them per query vector; the chunks not
    embedded yet by a filtered read, when `unembedded_chunks`), returning ids and scores only: the graph knows
    each chunk's note and ranking fields, so no payload is read until a hit is shown. The first of the highest
    dense + lexical per note is kept; only those become candidates."""
    have = {c.payload.get("note_id") for c in cands.values()}
    new_notes = list(subgraph.notes - have)
    if len(new_notes) > max_nodes:      # past the cap, the notes most central to the hits come first
        new_notes = sorted(new_notes, key=lambda n: (-subgraph.centrality_bonus(n), n))[:max_nodes]
    chunks = sum(len(graph.notes.get(n, {}).get("chunks", ())) for n in new_notes)
    if not chunks:
        return []
    # the notes' chunks by their note ids, a keyword index: a filter of ~550 point ids took the engine's binding
    # ~1 ms to build, this one 0.1 ms. The link graph is current (patched after every write step), so it lists
    # the chunks the filter selects; the room in `limit` and the check of each hit's note keep a chunk it does not
    # list from taking a listed one's place
    wanted = set(new_notes)
    where = Where.fields(note_id=sorted(wanted)).and_(flt)
    limit = 2 * chunks
    chunk_of: dict[str, tuple[str, str]] = {}     # the hits' (note, chunk) by point id

    def listed(pid: str) -> bool:
        at = graph.locate(pid)
        if at is None or at[0] not in wanted:
            return False
        chunk_of[pid] = at
        return True

    dense: dict[str, float] = {}
    for vec in dense_vecs:
        for r in store.search_dense(vec, limit, where, params=EXACT):
            if listed(r.id):
                dense[r.id] = max(dense.get(r.id, -1.0), float(r.score))
    unembedded = [r.id for r in store.scroll("chunks", where.and_(WITHOUT_DENSE), payload=False) if listed(r.id)] \
        if unembedded_chunks else []      # phase 2 has not embedded them yet: keywords and links only
    found = sorted({*dense, *unembedded})
    lexical = lexical_shares(store, limit, pool.sparse_queries, pool.lexical_max, where)
    best: dict[str, tuple[float, str]] = {}
    for pid in found:       # in point-id order: ties go to the same chunk on both engines
        nid = chunk_of[pid][0]
        score = dense.get(pid, 0.0) + lexical.get(pid, 0.0)
        if nid not in best or score > best[nid][0]:
            best[nid] = (score, pid)
    return [Candidate(pid, graph.brief_payload(*chunk_of[pid]), dense=dense.get(pid, 0.0),
                      lexical=lexical.get(pid, 0.0), via_graph=True, embedded=pid in dense, brief=True)
            for _, pid in best.values()]


def complete(store: Store, cands: Iterable[Candidate]) -> None:
    """Read the full payload (text, title, headings, ...) of the brief candidates about to be shown."""
    brief = {c.point_id: c for c in cands if c.brief}
    for r in store.retrieve("chunks", list(brief)):
        brief[r.id].payload = r.payload
        brief[r.id].brief = False
