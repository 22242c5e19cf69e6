"""Save & Analyze through the service: each suggestion kind, the exclusions, drafts versus notes, the LLM's part.

The vault is imported with the fake Ollama (hashed bag-of-words vectors: texts sharing words are near), so the
whole real path runs: parse, chunk, embed, hybrid search with graph expansion, mentions, rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_vault import write_vault

from mindnet.analysis.mentions import mask_keeping_offsets
from mindnet.errors import InputTooLargeError, NoteNotFoundError, QueryError

VAULT = {
    "concepts/qdrant.md": "---\nid: qdrant\naliases: [Vektordatenbank]\ntags: [datenbank]\n---\n# Qdrant\n\n"
                          "Qdrant speichert Vektoren und Payload in Collections und filtert Vektoren schnell.\n",
    "concepts/bm25.md": "---\nid: bm25\ntags: [suche]\n---\n# BM25\n\n"
                        "BM25 gewichtet Terme nach Häufigkeit im Dokument und Seltenheit im Korpus.\n",
    "concepts/embeddings.md": "---\nid: embeddings\ntags: [datenbank, suche]\n---\n# Embeddings\n\n"
                              "Embeddings sind Vektoren für Texte; sie liegen als Vektoren in [[Qdrant]].\n",
    "concepts/vector-index.md": "---\nid: vector-index\ntags: [datenbank]\n---\n# HNSW Index\n\n"
                                "Ein HNSW Index findet Vektoren schnell; Collections speichern Vektoren und "
                                "Payload.\n",
    "projects/garden.md": "---\nid: garden\ntags: [garten]\n---\n# Gemüsegarten\n\n"
                          "Tomaten, Bohnen und Kürbis im Hochbeet; gießen am Abend.\n",
    "tasks/beet.md": "---\nid: beet\n---\n# Hochbeet bauen\n\nBretter kaufen, Hochbeet für Tomaten bauen.\n",
}


@pytest.fixture
def app(make_app, tmp_path: Path):
    write_vault(tmp_path / "vault", VAULT)
    mindnet = make_app()
    mindnet.ingest()
    return mindnet


def analyze(app, **kwargs):
    kwargs.setdefault("llm", False)
    return app.analyze(**kwargs)


# ------------------------------------------------------------------ unlinked mentions


def test_mentions_give_offsets_of_unlinked_titles_and_aliases(app) -> None:
    text = "Heute: Qdrant getestet.\nDie Vektordatenbank war schnell."
    result = analyze(app, text=text)
    found = {(m.note_id, m.span.surface, m.span.line) for m in result.mentions}
    assert found == {("qdrant", "Qdrant", 1), ("qdrant", "Vektordatenbank", 2)}
    for m in result.mentions:
        assert text[m.span.start:m.span.end] == m.span.surface


def test_mentions_skip_code_and_links_but_keep_offsets_after_a_code_block(app) -> None:
    text = "---\ntitle: Notiz\n---\n```\nBM25 im Code\n```\n`Qdrant` inline, [[BM25]] verlinkt.\nNun Qdrant."
    result = analyze(app, text=text)
    assert [(m.note_id, m.span.line) for m in result.mentions] == [("qdrant", 8)]
    m = result.mentions[0]
    assert text[m.span.start:m.span.end] == "Qdrant" and m.span.start == text.rindex("Qdrant")


def test_masking_keeps_every_offset() -> None:
    text = "a\n```py\nx = 1\n```\n`code` [[Link]] b"
    masked = mask_keeping_offsets(text)
    assert len(masked) == len(text) and masked.endswith(" b") and "x = 1" not in masked and "Link" not in masked


def test_a_name_shared_by_two_notes_halves_the_confidence(app, tmp_path: Path) -> None:
    write_vault(tmp_path / "vault", {"other/qdrant2.md": "---\nid: qdrant2\naliases: [Qdrant]\n---\n# Q2\n\nAnderes."})
    app.ingest()
    result = analyze(app, text="Qdrant ist gut.")
    conf = {m.note_id: m.confidence for m in result.mentions}
    assert conf == {"qdrant": 0.3, "qdrant2": 0.3}


# ------------------------------------------------------------------ related notes and exclusions


def test_related_notes_exclude_the_note_itself_and_what_it_links(app) -> None:
    result = analyze(app, note="concepts/embeddings.md")
    suggested = {s.note_id for s in result.links} | {r.note_id for r in result.related}
    assert "embeddings" not in suggested and "qdrant" not in suggested
    assert result.source.linked == ["qdrant"] and result.source.note_id == "embeddings"
    assert result.related[0].note_id == "vector-index"


def test_related_reason_is_the_scorers_breakdown(app) -> None:
    r = analyze(app, note="concepts/embeddings.md").related[0]
    assert r.score_breakdown["total"] == pytest.approx(r.score, abs=1e-4)
    assert r.reason.startswith(f"score {r.score:.2f}: similar content {r.score_breakdown['semantic']:.2f}")


def test_a_note_id_a_path_and_a_path_without_md_name_the_same_note(app) -> None:
    ids = {analyze(app, note=ref).source.note_id for ref in ("embeddings", "concepts/embeddings.md",
                                                               "concepts/embeddings")}
    assert ids == {"embeddings"}


def test_an_existing_note_reuses_its_stored_vectors(app, fake_ollama) -> None:
    before = len(fake_ollama.requests)
    result = analyze(app, note="concepts/embeddings.md")
    assert result.source.embedded == 0
    assert [path for path, _ in fake_ollama.requests[before:] if "embed" in path] == []


def test_a_draft_is_embedded(app) -> None:
    assert analyze(app, text="Tomaten im Hochbeet").source.embedded == 1


def test_a_draft_of_an_indexed_note_is_not_suggested_to_itself(app) -> None:
    text = "---\nid: qdrant\n---\n# Qdrant\n\nQdrant speichert Vektoren; siehe auch Embeddings."
    result = analyze(app, text=text)
    assert result.source.note_id == "qdrant"
    assert "qdrant" not in {s.note_id for s in result.links}
    assert "embeddings" in {m.note_id for m in result.mentions}


def test_a_draft_at_an_existing_path_is_that_note(app) -> None:
    result = analyze(app, text="Qdrant speichert Vektoren.", path="concepts/qdrant.md")
    assert result.source.note_id == "qdrant" and "qdrant" not in {s.note_id for s in result.links}


def test_links_merge_mention_and_related_per_note(app) -> None:
    result = analyze(app, text="Gießen am Abend: Tomaten im Gemüsegarten, Bohnen und Kürbis im Hochbeet.")
    link = next(s for s in result.links if s.note_id == "garden")
    assert link.sources == ["mention", "related"]
    m = next(x for x in result.mentions if x.note_id == "garden")
    r = next(x for x in result.related if x.note_id == "garden")
    assert link.confidence == pytest.approx(1 - (1 - m.confidence) * (1 - r.confidence), abs=1e-3)
    assert [x.confidence for x in result.links] == sorted((x.confidence for x in result.links), reverse=True)


# ------------------------------------------------------------------ relation kinds


@pytest.mark.parametrize(("text", "note", "kind", "rule"), [
    ("Das Projekt hängt ab von Qdrant.", "qdrant", "depends_on", "cue"),
    ("This design contradicts BM25 entirely.", "bm25", "contradicts", "cue"),
    ("Die Idee basiert auf Embeddings.", "embeddings", "inspired_by", "cue"),
    ("Qdrant war gut. Das hängt ab von der Laune.", "qdrant", "related_to", "edge_default"),  # other sentence
    ("Qdrant basiert auf BM25.", "bm25", "inspired_by", "cue"),
    ("Qdrant basiert auf BM25.", "qdrant", "related_to", "edge_default"),   # the cue's subject, not its object
])
def test_cue_phrases_near_a_mention_set_the_kind(app, text: str, note: str, kind: str, rule: str) -> None:
    link = next(s for s in analyze(app, text=text).links if s.note_id == note)
    assert (link.relation.kind, link.relation.rule) == (kind, rule)
    assert link.callout == f"> [!edge] {kind}: [[{link.link_text}]]"


def test_type_pair_rule_without_a_cue(app) -> None:
    link = next(s for s in analyze(app, note="tasks/beet.md").links if s.note_id == "garden")
    assert (link.relation.kind, link.relation.rule) == ("part_of", "type_pair")


def test_edge_defaults_of_the_source_type(app) -> None:
    result = analyze(app, text="---\ntype: project\n---\nWir brauchen BM25 hier nicht.", note_type=None)
    link = next(s for s in result.links if s.note_id == "bm25")
    assert (link.relation.kind, link.relation.rule) == ("depends_on", "edge_default")


def test_the_llm_refines_the_kinds_when_reachable(app, fake_ollama) -> None:
    fake_ollama.chat_fn = lambda messages: "1: supports\n2: blocks\n3: nonsense"
    result = app.analyze(text="Qdrant und BM25 und Embeddings.", limit=3)
    assert result.llm["used"] is True
    kinds = [(s.relation.kind, s.relation.rule) for s in result.links]
    assert kinds[0] == ("supports", "llm") and kinds[1] == ("blocks", "llm")
    assert kinds[2][1] != "llm"           # an unknown kind keeps the rule's answer
    assert result.links[0].callout.startswith("> [!edge] supports: ")


def test_without_a_reachable_llm_the_rules_answer(app, fake_ollama) -> None:
    fake_ollama.chat_mode = "error"
    result = app.analyze(text="Das hängt ab von Qdrant.")
    assert result.llm["used"] is False and result.llm["reason"]
    assert result.links[0].relation.rule == "cue"


def test_llm_false_skips_the_llm(app, fake_ollama) -> None:
    fake_ollama.chat_fn = lambda messages: pytest.fail("the LLM was asked")
    assert app.analyze(text="Qdrant.", llm=False).llm == {"used": False, "reason": "off in this request"}


# ------------------------------------------------------------------ type, tags, duplicate


def test_type_from_a_path_rule(app) -> None:
    t = analyze(app, text="Tomaten gießen.", path="projects/neu.md").type
    assert (t.value, t.confidence) == ("project", 0.9) and "projects/**" in t.reason


def test_type_and_tags_from_the_nearest_notes(app) -> None:
    result = analyze(app, text="Vektoren in Collections speichern, Payload filtern, Vektoren schnell finden.")
    assert result.type.value == "concept" and result.type.current is None
    assert "datenbank" in [t.tag for t in result.tags]


def test_tags_the_text_has_are_not_suggested(app) -> None:
    result = analyze(app, text="#datenbank Vektoren in Collections speichern, Payload filtern.")
    assert "datenbank" not in [t.tag for t in result.tags]


def test_a_copy_of_a_note_is_a_possible_duplicate(app) -> None:
    text = "# HNSW Index\n\nEin HNSW Index findet Vektoren schnell; Collections speichern Vektoren und Payload.\n"
    dup = analyze(app, text=text).duplicate
    assert dup is not None and dup.note_id == "vector-index" and dup.similarity >= 0.95


def test_a_merely_related_text_is_no_duplicate(app) -> None:
    assert analyze(app, text="Vektoren für Tomaten im Hochbeet.").duplicate is None


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"text": ""}, "text"),
    ({"text": "  \n "}, "text"),
    ({"text": "---\ntitle: x\n---\n"}, "text"),
    ({}, "text"),
    ({"text": "a", "note": "qdrant"}, "note"),
    ({"note": " "}, "note"),
    ({"text": "a", "path": "../out.md"}, "path"),
    ({"text": "a", "note_type": "recipe"}, "note_type"),
    ({"text": "a", "limit": 0}, "limit"),
])
def test_bad_input_names_the_field(app, kwargs: dict, field: str) -> None:
    with pytest.raises(QueryError) as err:
        analyze(app, **kwargs)
    assert err.value.field == field


def test_an_unknown_note_is_not_found(app) -> None:
    with pytest.raises(NoteNotFoundError, match="no note with id or path 'nowhere.md'"):
        analyze(app, note="nowhere.md")


def test_a_too_large_draft_is_refused_naming_the_limit(app) -> None:
    with pytest.raises(InputTooLargeError, match=r"1,048,576 bytes, over the analyze limit of 200,000 bytes"):
        analyze(app, text="x" * 1024 * 1024)


def test_analyze_never_writes_the_vault(app, tmp_path: Path) -> None:
    files = sorted((tmp_path / "vault").rglob("*"))
    before = {p: p.read_bytes() for p in files if p.is_file()}
    analyze(app, note="tasks/beet.md")
    analyze(app, text="Qdrant", path="tasks/beet.md")
    assert sorted((tmp_path / "vault").rglob("*")) == files
    assert {p: p.read_bytes() for p in files if p.is_file()} == before


def test_a_long_draft_embeds_a_few_cut_chunks_and_searches_all_by_bm25(app, fake_ollama) -> None:
    sections = [f"## Teil {i}\n\n" + " ".join(f"wort{i}x{j}" for j in range(150)) for i in range(8)]
    text = "---\ntype: project\n---\n" + "\n\n".join(sections) + "\n\nZum Schluss: Tomaten im Hochbeet gießen."
    before = len(fake_ollama.requests)
    result = analyze(app, text=text)
    assert (result.source.chunks, result.source.embedded) == (8, 4)
    inputs = [body.get("input") for path, body in fake_ollama.requests[before:] if path == "/api/embed"]
    texts = [t for i in inputs for t in (i if isinstance(i, list) else [i])]
    assert len(texts) == 4 and max(len(t.removeprefix("search_document: ").split()) for t in texts) <= 100
    # the garden words stand past the embedded 100 words of the last chunk: BM25 over all chunks found them
    assert "garden" in {r.note_id for r in result.related}


def test_before_any_import_a_draft_is_told_to_import_first(make_app) -> None:
    from mindnet.errors import EmptyIndexError
    with pytest.raises(EmptyIndexError, match="import your vault first"):
        make_app().analyze(text="Qdrant", llm=False)


@pytest.mark.parametrize(("their_words", "found"), [(100, True), (60, True), (40, False), (250, False)])
def test_a_duplicate_needs_a_similar_length(their_words: int, found: bool) -> None:
    import numpy as np

    from mindnet.analysis.catalog import Catalog, IndexedNote
    from mindnet.analysis.duplicates import find_duplicate
    from mindnet.analysis.related import NoteMatch
    from mindnet.settings import AnalysisDuplicates, MentionSettings

    catalog = Catalog([IndexedNote("n", "N", "n.md", "concept")], MentionSettings())
    vectors = np.eye(2, dtype=np.float32)
    near = [NoteMatch("n", "n#c01", 1.0, 1.0, {}, {}, {})]
    dup = find_duplicate(vectors, 100, near, {"n": (vectors, their_words)}, catalog, AnalysisDuplicates())
    assert (dup is not None) is found


def test_broken_frontmatter_is_analysed_body_only_with_a_warning(app) -> None:
    result = analyze(app, text="---\nx: [\n---\nQdrant speichert Vektoren.")
    assert "qdrant" in {m.note_id for m in result.mentions}
    assert any("frontmatter" in w for w in result.warnings)
