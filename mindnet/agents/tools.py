"""The vault for agents: search, read, the graph around a note, Save & Analyze and safe writes, over one open
`Mindnet`. The same tools serve MCP clients (`mindnet.agents.mcp_server`) and LlamaIndex agents
(`mindnet.agents.llama`).

Each tool is a thin layer over what the API does (`Mindnet.aquery`, `asave_draft`, `aanalyze`, the suggest
`--apply` write) and returns plain JSON data. What a model can act on - an unknown note (with the closest names),
an empty query, a path outside the vault, a write over the size limit, a refused overwrite - is a `MindnetError`
with a message that says what to do; `tool_error` (in `mindnet.agents.specs`, with the tools' descriptions) words
it for the model. Every call goes to the search history (`search_history.jsonl`) with a `query_id` and its source
(`mcp` or `agent`).

Nothing here holds a lock across a model call: searches and writes take `Mindnet.index_lock` step by step, as the
chat does, and all blocking work runs in worker threads so a server's event loop keeps answering.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mindnet import safe_write
from mindnet.agents.models import (
    AddLinksInput,
    AppendInput,
    ReadNoteInput,
    RecentChangesInput,
    RelatedInput,
    SearchInput,
    SuggestLinksInput,
    WriteNoteInput,
)
from mindnet.agents.specs import SPEC_BY_NAME, SPECS, ToolSpec
from mindnet.agents.tool_helpers import (
    conflict_for_model,
    distances,
    frontmatter_type,
    iso_time,
    parse_since,
    passage,
    too_large,
)
from mindnet.errors import (
    DraftConflictError,
    NoteNotFoundError,
    QueryError,
    VaultError,
)
from mindnet.retrieval.graph import STRUCTURAL, note_of
from mindnet.retrieval.query import QueryRequest
from mindnet.retrieval.results import plain_reasons
from mindnet.store.collections import point_id
from mindnet.store.engine import Where

if TYPE_CHECKING:
    from mindnet.analysis.catalog import Catalog, IndexedNote
    from mindnet.service import Mindnet



class VaultTools:
    """The tools over one `Mindnet`; `await call(name, arguments)` runs one and returns its JSON data, raising
    `MindnetError` or pydantic's `ValidationError` for a call the model should change. `read_only` (default:
    MINDNET_MCP_READ_ONLY) hides and refuses the write tools."""

    def __init__(self, mindnet: Mindnet, *, source: str = "mcp", read_only: bool | None = None) -> None:
        self.mindnet = mindnet
        self.source = source
        self.read_only = mindnet.settings.mcp_read_only if read_only is None else read_only
        self._handlers: dict[str, Callable[[Any], Awaitable[dict[str, Any]]]] = {
            "search": self.search, "read_note": self.read_note, "related": self.related,
            "suggest_links": self.suggest_links, "write_note": self.write_note,
            "append_to_note": self.append_to_note, "add_links": self.add_links,
            "recent_changes": self.recent_changes,
        }

    @property
    def specs(self) -> list[ToolSpec]:
        return [s for s in SPECS if not (self.read_only and s.writes)]

    async def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        spec = SPEC_BY_NAME.get(name)
        if spec is None:
            raise QueryError(f"no tool {name!r}; the tools are {', '.join(s.name for s in self.specs)}")
        if spec.writes and self.read_only:
            raise VaultError(f"{name} is switched off: this server is read-only (MINDNET_MCP_READ_ONLY=1)",
                             hint="search and read only; ask the user to write the note")
        args = spec.model.model_validate(arguments or {})
        return await self._handlers[name](args)

    # ------------------------------------------------------------------ reading

    async def search(self, a: SearchInput) -> dict[str, Any]:
        request = QueryRequest.build(
            query=a.query, mode=a.mode, top_k=a.top_k, group="note", explain=True,
            expand={"depth": a.depth} if a.depth is not None else None,
            filters={"types": a.types, "tags": a.tags, "path_prefix": (a.folder or "").strip("/") or None})
        await self._ready()
        out = await self.mindnet.aquery(request, source=self.source)
        hits = [{"rank": i, "path": h.get("path"), "title": h.get("title"), "type": h.get("type"),
                 "score": round(float(h.get("score") or 0.0), 4),
                 "section": " > ".join(map(str, h.get("heading_path") or [])),
                 "passage": passage(str(h.get("text") or "")),
                 "reason": "; ".join(plain_reasons(h, limit=2)[:3])}
                for i, h in enumerate(out["hits"], 1)]
        result: dict[str, Any] = {"query_id": out["query_id"], "mode": out["mode"], "hits": hits}
        if not hits:
            result["hint"] = "no note matched; try other words, fewer filters, or mode 'semantic'"
        if out.get("warnings"):
            result["warnings"] = out["warnings"]
        return result

    async def read_note(self, a: ReadNoteInput) -> dict[str, Any]:
        catalog = await self.catalog()
        note = self._find(catalog, a.note)
        data = await asyncio.to_thread(self._read, note, catalog, a.max_chars)
        data["query_id"] = self._log(f"read_note {a.note}", "read_note", [note])
        return data

    def _read(self, note: IndexedNote, catalog: Catalog, max_chars: int) -> dict[str, Any]:
        m = self.mindnet
        path = self._vault_file(note.path)
        raw = safe_write.read_note(path)
        if raw is None:
            raise NoteNotFoundError(f"{note.path} is in the index but no longer in the vault (deleted or moved "
                                    f"just now); search again in a few seconds")
        text = raw.decode("utf-8", errors="replace")
        with m.index_lock:
            records = m.store.retrieve("notes", [point_id(note.note_id)],
                                       payload=["frontmatter", "tags", "aliases", "names", "updated"])
        meta = records[0].payload if records else {}
        links_out, links_in = self._links(note, catalog)
        return {"path": note.path, "note_id": note.note_id, "title": note.title, "names": note.names,
                "type": note.type, "tags": list(meta.get("tags") or note.tags),
                "aliases": list(meta.get("aliases") or note.aliases), "frontmatter": meta.get("frontmatter") or {},
                "updated": iso_time(meta.get("updated")), "version": safe_write.version_of(raw),
                "markdown": text[:max_chars], "truncated": len(text) > max_chars, "chars": len(text),
                "links_out": links_out, "links_in": links_in}

    def _links(self, note: IndexedNote, catalog: Catalog) -> tuple[list[dict], list[dict]]:
        """The note's links out (from the edges collection: unresolved ones too) and in (the link graph)."""
        m = self.mindnet
        with m.index_lock:
            edges = list(m.store.scroll("edges", Where.field("note_id", note.note_id)))
        out: dict[tuple, dict] = {}
        for r in edges:
            e = r.payload
            if e.get("kind") in STRUCTURAL:
                continue
            target = catalog.notes.get(note_of(str(e.get("target_id") or ""))) if e.get("resolved", True) else None
            if target is not None and target.note_id == note.note_id:
                continue
            key = (e.get("kind"), target.note_id if target else e.get("target_text"))
            out.setdefault(key, {"kind": e.get("kind"), "written": e.get("target_text"),
                                 "resolved": target is not None, "path": target.path if target else None,
                                 "title": target.title if target else None, "rule": e.get("rule_id"),
                                 "confidence": e.get("confidence")})
        sub = m.searcher.neighbourhood([note.note_id], 1)
        into: dict[tuple, dict] = {}
        for e in sub.incoming(note.note_id):
            source = catalog.notes.get(e["note_id"])
            if source is not None:
                into.setdefault((e["kind"], source.note_id), {
                    "kind": e["kind"], "path": source.path, "title": source.title, "rule": e.get("rule_id"),
                    "confidence": e.get("confidence")})
        return list(out.values()), list(into.values())

    async def related(self, a: RelatedInput) -> dict[str, Any]:
        catalog = await self.catalog()
        m = self.mindnet
        known = set(m.searcher.link_kinds())
        unknown = [k for k in a.edge_kinds if k not in known]
        if unknown:
            raise QueryError(f"unknown link kind {unknown[0]!r}; the kinds are {', '.join(sorted(known))}",
                             field="edge_kinds")
        if a.note:
            seeds = [self._find(catalog, a.note).note_id]
            query_id = None
        else:
            found = await self.search(SearchInput(query=a.query or "", top_k=5, depth=0))
            query_id = found["query_id"]
            seeds = [n.note_id for h in found["hits"] if (n := catalog.find(str(h["path"]))) is not None]
        sub = await asyncio.to_thread(m.searcher.neighbourhood, seeds, a.depth, a.edge_kinds or None,
                                      max(4 * a.limit, 100))
        distance = distances(seeds, sub.edges)
        keep = sorted(distance, key=lambda n: (distance[n], n not in seeds))[:a.limit]
        kept = set(keep)

        def shown(nid: str) -> dict[str, Any]:
            n = catalog.notes.get(nid)
            return {"path": n.path if n else None, "title": n.title if n else nid, "type": n.type if n else None}

        notes = [{**shown(nid), "distance": distance[nid], "start": nid in seeds} for nid in keep]
        edges = [{"source": shown(e["note_id"])["path"], "source_title": shown(e["note_id"])["title"],
                  "target": shown(note_of(e["target_id"]))["path"],
                  "target_title": shown(note_of(e["target_id"]))["title"], "kind": e["kind"],
                  "rule": e.get("rule_id"), "confidence": e.get("confidence")}
                 for e in sub.edges if e["note_id"] in kept and note_of(e["target_id"]) in kept]
        result = {"start": [shown(s)["path"] for s in seeds], "depth": a.depth, "notes": notes, "edges": edges,
                  "query_id": query_id or self._log(f"related {a.note}", "related",
                                                    [catalog.notes[n] for n in keep if n in catalog.notes])}
        if not edges:
            result["hint"] = "no resolved links around the start; try depth 2, other link kinds, or search"
        return result

    async def suggest_links(self, a: SuggestLinksInput) -> dict[str, Any]:
        limit = self.mindnet.settings.mcp_max_write_bytes
        if a.text is not None and len(a.text.encode("utf-8", "surrogatepass")) > limit:
            raise QueryError(too_large(a.text, limit), field="text")
        request: dict[str, Any] = {"limit": a.limit, "llm": a.llm}
        if a.note:
            catalog = await self.catalog()
            request["note"] = self._find(catalog, a.note).path
        else:
            request["text"] = a.text
        await self._ready()
        result = (await self.mindnet.aanalyze(**request)).model_dump(mode="json")
        links = [{"title": s["title"], "path": s["path"], "kind": s["relation"]["kind"],
                  "confidence": round(float(s["confidence"]), 3), "reason": s.get("reason") or "",
                  "link": f"[[{s['link_text']}]]"} for s in result.get("links") or []]
        out = {"source": (result.get("source") or {}).get("path"), "links": links,
               "type": result.get("type"), "tags": result.get("tags"), "duplicates": result.get("duplicates"),
               "llm": result.get("llm")}
        out["query_id"] = self._log(f"suggest_links {a.note or (a.text or '')[:80]}", "suggest_links", [])
        return out

    async def recent_changes(self, a: RecentChangesInput) -> dict[str, Any]:
        since = parse_since(a.since)
        m = self.mindnet
        await self._ready()

        def read() -> list[dict[str, Any]]:
            with m.index_lock:
                if not m.store.exists("notes"):
                    return []
                return [r.payload for r in m.store.scroll("notes", payload=["path", "title", "type", "updated"])]

        rows = [r for r in await asyncio.to_thread(read) if float(r.get("updated") or 0) >= since.timestamp()]
        rows.sort(key=lambda r: (-float(r.get("updated") or 0), str(r.get("path"))))
        notes = [{"path": r.get("path"), "title": r.get("title"), "type": r.get("type"),
                  "updated": iso_time(r.get("updated"))} for r in rows[:a.limit]]
        out: dict[str, Any] = {"since": since.isoformat(timespec="seconds"), "count": len(rows), "notes": notes,
                               "importing": m.importing}
        if m.live is not None:
            last = m.live.status().get("last_reimport")
            out["last_reimport"] = {k: last[k] for k in ("label", "seconds_ago", "new", "changed", "deleted")} \
                if last else None
        out["query_id"] = self._log(f"recent_changes {a.since}", "recent_changes", [])
        return out

    # ------------------------------------------------------------------ writing

    async def write_note(self, a: WriteNoteInput) -> dict[str, Any]:
        m = self.mindnet
        limit = m.settings.mcp_max_write_bytes
        if len(a.markdown.encode("utf-8", "surrogatepass")) > limit:
            raise QueryError(too_large(a.markdown, limit), field="markdown")
        note_type = a.note_type or frontmatter_type(a.markdown) or m.settings.types.default_type
        await self._ready()
        try:
            saved = await m.asave_draft(a.markdown, note_type, overwrite=a.overwrite, replaces=a.replaces)
        except DraftConflictError as exc:
            raise conflict_for_model(exc, a) from exc
        catalog = await self.catalog()
        note = catalog.find(saved["path"])
        links_out = (await asyncio.to_thread(self._links, note, catalog))[0] if note is not None else []
        report = saved["import"]
        out = {"path": saved["path"], "title": saved["title"], "note_id": saved["note_id"],
               "version": saved["version"], "backup": saved["backup"], "warnings": saved["warnings"],
               "links_out": links_out, "searchable": note is not None,
               "import": {k: report.get(k) for k in ("new", "changed", "edges_rewritten")}}
        unresolved = [link["written"] for link in links_out if not link["resolved"]]
        if unresolved:
            out["hint"] = (f"{len(unresolved)} link(s) point to no note yet ({', '.join(map(str, unresolved[:5]))}); "
                           f"they resolve when such a note is written")
        out["query_id"] = self._log(f"write_note {saved['path']}", "write_note", [note] if note else [])
        return out

    async def append_to_note(self, a: AppendInput) -> dict[str, Any]:
        limit = self.mindnet.settings.mcp_max_write_bytes
        if len(a.markdown.encode("utf-8", "surrogatepass")) > limit:
            raise QueryError(too_large(a.markdown, limit), field="markdown")
        catalog = await self.catalog()
        note = self._find(catalog, a.note)
        return await self._append(note, a.markdown.strip("\n"), a.version, "append_to_note")

    async def add_links(self, a: AddLinksInput) -> dict[str, Any]:
        from mindnet.analysis.apply import callout_block
        catalog = await self.catalog()
        note = self._find(catalog, a.note)
        known = set(self.mindnet.searcher.link_kinds()) - {"mentions"}
        pairs: list[tuple[str, str]] = []
        for i, link in enumerate(a.links):
            kind = link.kind.strip()
            if kind not in known:
                raise QueryError(f"unknown link kind {kind!r}; use one of {', '.join(sorted(known))}",
                                 field=f"links.{i}.kind")
            target = self._find(catalog, link.target, field=f"links.{i}.target")
            if target.note_id == note.note_id:
                raise QueryError(f"{link.target!r} is the note itself; a note does not link to itself",
                                 field=f"links.{i}.target")
            pairs.append((kind, catalog.link_text(target)))
        return await self._append(note, callout_block(pairs), a.version, "add_links")

    async def _append(self, note: IndexedNote, block: str, version: str | None, tool: str) -> dict[str, Any]:
        m = self.mindnet
        root = Path(m.settings.vault_root)
        path = self._vault_file(note.path)

        def write() -> Path:
            from mindnet.analysis.apply import append_plan, write_plan
            plan = append_plan(root, note.path, block)
            if version is not None and version != plan.version:
                from mindnet.errors import NoteChangedError
                raise NoteChangedError(f"{note.path} changed since you read it (version {plan.version} now); "
                                       f"nothing was written", path=note.path,
                                       hint="read_note again and append to the text as it is now",
                                       expected=version, current=plan.old.encode("utf-8"), version=plan.version)
            limit = m.settings.types.max_file_bytes
            if len(plan.new.encode("utf-8")) > limit:
                raise VaultError(f"the note would be {len(plan.new.encode('utf-8'))} bytes, over the import's "
                                 f"limit of {limit}", path=note.path, hint="append less, or start a new note")
            return write_plan(plan, root, hint="the note changed just now: read_note again, then repeat the call "
                                               "with its new version")

        backup = await asyncio.to_thread(write)
        report = (await m.aingest()).as_dict()
        raw = safe_write.read_note(path) or b""
        return {"path": note.path, "title": note.title, "version": safe_write.version_of(raw),
                "appended": block, "backup": backup.relative_to(root.resolve()).as_posix()
                if backup.is_relative_to(root.resolve()) else backup.name,
                "import": {k: report.get(k) for k in ("changed", "edges_rewritten")},
                "query_id": self._log(f"{tool} {note.path}", tool, [note])}

    # ------------------------------------------------------------------ helpers

    async def _ready(self) -> None:
        """Open the index in a worker thread (the first call of a process), never on the event loop."""
        await asyncio.to_thread(lambda: self.mindnet.searcher)

    async def catalog(self) -> Catalog:
        await self._ready()
        return await asyncio.to_thread(self.mindnet.analyzer.catalog)

    def _find(self, catalog: Catalog, ref: str, *, field: str = "note") -> IndexedNote:
        note = catalog.find(ref)
        if note is not None:
            return note
        if not catalog.notes:
            raise NoteNotFoundError("the index holds no notes yet; import the vault first (`mindnet ingest`)")
        names: dict[str, str] = {}
        for n in catalog.notes.values():
            for name in (n.title, *n.aliases, *n.names, n.path.removesuffix(".md")):
                if name:
                    names.setdefault(name.casefold(), n.title or n.path)
        close = difflib.get_close_matches(ref.strip().casefold(), list(names), n=5, cutoff=0.5)
        shown = list(dict.fromkeys(names[c] for c in close))
        hint = f"the closest notes: {', '.join(repr(s) for s in shown)}" if shown else \
            "search for it first, then use the path a hit gives"
        raise NoteNotFoundError(f"{field}: no note is called {ref.strip()[:200]!r}; {hint}")

    def _vault_file(self, rel: str) -> Path:
        root = Path(self.mindnet.settings.vault_root).resolve()
        target = (root / rel).resolve()
        if not target.is_relative_to(root):
            raise VaultError("the path is outside the vault; notes are only read and written inside it", path=rel)
        return target

    def _log(self, text: str, tool: str, notes: list[IndexedNote]) -> str:
        hits = [{"node_id": n.note_id, "note_id": n.note_id, "title": n.title, "score": 0.0} for n in notes[:50]]
        return self.mindnet.logs.record_search(text[:500], mode=tool, source=self.source, hits=hits)
