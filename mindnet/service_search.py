"""Searching and recording searches, for `Mindnet` (`mindnet.service`): each search is logged to
search_history.jsonl (so it can be rated), refused while a full rebuild runs, and its errors say what is going on
(the first import still reading, a collection found damaged).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import TYPE_CHECKING

from mindnet.errors import EmptyIndexError, IndexRebuildingError, StoreError
from mindnet.logs import FlywheelLogs

if TYPE_CHECKING:
    from mindnet.indexing.pipeline import Importer
    from mindnet.indexing.progress import ImportProgress
    from mindnet.retrieval.query import QueryRequest
    from mindnet.retrieval.retriever import RetrievalResult
    from mindnet.retrieval.search import GraphSearch, SearchResult
    from mindnet.settings import Settings


class SearchMixin:
    """`query` / `aquery` / `record` and the search history (`logs`) of `Mindnet`."""

    if TYPE_CHECKING:     # given by `Mindnet`
        settings: Settings
        progress: ImportProgress
        _problems: dict[str, str]

        @property
        def searcher(self) -> GraphSearch: ...

        @property
        def importer(self) -> Importer: ...

    @cached_property
    def logs(self) -> FlywheelLogs:
        return FlywheelLogs(self.settings.log_dir, history_max_mb=self.settings.history_max_mb,
                            history_keep=self.settings.history_keep)

    def record(self, request: QueryRequest, result: SearchResult | RetrievalResult, *, source: str = "query",
               strategy: str | None = None) -> str:
        """Append the search and its hits (with their breakdowns) to search_history.jsonl; returns query_id."""
        from mindnet.retrieval.results import hit_dict, result_hits
        hits = [{k: h[k] for k in ("node_id", "note_id", "title", "score")} | {"breakdown": h["score_breakdown"] or {}}
                for h in (hit_dict(n, explain=False) for n in result_hits(result))]
        return self.logs.record_search(request.query, mode=result.query.mode, source=source, hits=hits,
                                       strategy=strategy)

    def query(self, request: QueryRequest, *, source: str = "query") -> dict:
        """Search, log (as coming from `source`: query, mcp, agent), and return the JSON-able result (query_id,
        hits with breakdowns and explanations)."""
        with self._first_import_note(), self._noting_damage():
            result = self.searcher.search(request)
        return self._result(request, result, source)

    async def aquery(self, request: QueryRequest, *, source: str = "query") -> dict:
        with self._first_import_note(), self._noting_damage():
            result = await self.searcher.asearch(request)
        return self._result(request, result, source)

    def _result(self, request: QueryRequest, result: SearchResult, source: str) -> dict:
        from mindnet.retrieval.results import result_dict
        out = result_dict(result, query_id := self.record(request, result, source=source), explain=request.explain)
        if why := self.logs.unlogged(query_id):
            out["warnings"] = [f"search history not written, so this search cannot be rated: {why}"]
        return out

    def _search_gate(self) -> None:
        """While this process rebuilds the index (phase 1 of `ingest --full`), a search is refused at once (503
        with Retry-After), not kept waiting for the rebuild nor answered from half the index."""
        if "importer" not in self.__dict__ or not self.importer.rebuilding:
            return
        p = self.progress.as_dict()
        left = max(p["notes_to_write"] - p["notes_written"], 0)
        raise IndexRebuildingError(f"a full rebuild of the index is running ({p['notes_written']} of "
                                   f"{p['notes_to_write'] or p['notes']} notes written); searches are answered "
                                   f"again as soon as every note is written", retry_after=max(5, min(60, left // 50)))

    @contextmanager
    def _noting_damage(self) -> Iterator[None]:
        """A damaged collection is found when a search reads it: /health says so from then on."""
        try:
            yield
        except StoreError as exc:
            if type(exc) is StoreError:         # not "locked", "empty", "import running"
                self._problems["index"] = str(exc)
            raise

    @contextmanager
    def _first_import_note(self) -> Iterator[None]:
        """An empty index while the first import runs is a matter of seconds: say so, not "import first"."""
        try:
            yield
        except EmptyIndexError as exc:
            if not self.progress.as_dict()["running"]:
                raise
            raise EmptyIndexError(f"the first import is reading the vault ({self.progress.notes_total} notes "
                                  f"so far); search works as soon as it has written the first notes, in a few "
                                  f"seconds") from exc
