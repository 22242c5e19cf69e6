"""Mentions that mean something: common and short names are damped or dropped, a note's mentions are capped,
and the import report names where mentions come from."""

from __future__ import annotations

from helpers_vault import write_types, write_vault

from mindnet.indexing.edges import LinkResolver, derive_edges
from mindnet.indexing.mentions import MentionIndex, common_limit
from mindnet.indexing.node_parser import MarkdownNoteParser
from mindnet.retrieval.query import ExpandRequest, QueryRequest
from mindnet.settings import MentionSettings, TypesConfig
from mindnet.vault.note import Note, parse_note


def note(text: str, path: str, types: TypesConfig) -> Note:
    return parse_note(text.encode("utf-8"), path, types)


def mentions_of(n: Note, notes: list[Note], types: TypesConfig, index: MentionIndex) -> list[tuple[str, float]]:
    nodes = MarkdownNoteParser.from_config(types).note_to_nodes(n)
    return sorted((e.target_id, e.confidence) for e in derive_edges(n, nodes, LinkResolver(notes), types, index)
                  if e.kind == "mentions")


def _vault(types: TypesConfig, naming_tags: int) -> list[Note]:
    """40 notes; `naming_tags` of them name "Tags" and two of them name "Quantenschaum" too."""
    notes = [note("---\nid: tags\n---\n# Tags\n\nhow I tag", "concepts/tags.md", types),
             note("---\nid: qs\n---\n# Quantenschaum\n\nfoam", "concepts/qs.md", types)]
    for i in range(38):
        words = ["plain text"]
        if i < naming_tags:
            words.append("see Tags")
        if i < 2:
            words.append("and Quantenschaum")
        notes.append(note(f"---\nid: n{i}\n---\n# Note {i:02d}\n\n{' '.join(words)}", f"n{i}.md", types))
    return notes


def test_a_name_found_in_too_many_notes_makes_no_mention_edge(types_config) -> None:
    settings = MentionSettings(max_note_share=0.25, common_min_notes=5, short_title_chars=4)   # limit: 10 notes
    common = _vault(types_config, naming_tags=20)
    index = MentionIndex(common, settings)
    assert index.notes_counted == 40 and index.note_freq["tags"] == 20 and index.note_freq["quantenschaum"] == 2
    assert index.is_common("tags") and not index.is_common("quantenschaum")
    assert mentions_of(common[2], common, types_config, index) == [("qs", 0.4)]   # "Tags" dropped
    assert index.common_names() == [("tags", 20)]
    # the same name in fewer notes than the limit still links
    rare = _vault(types_config, naming_tags=8)
    index = MentionIndex(rare, settings)
    assert mentions_of(rare[2], rare, types_config, index) == [("qs", 0.4), ("tags", 0.4)]
    # a damping factor instead of dropping
    index = MentionIndex(common, settings.model_copy(update={"common_damping": 0.25}))
    assert mentions_of(common[2], common, types_config, index) == [("qs", 0.4), ("tags", 0.1)]


def test_the_floor_keeps_small_vaults_linked(types_config) -> None:
    notes = _vault(types_config, naming_tags=20)
    index = MentionIndex(notes, MentionSettings(max_note_share=0.01, common_min_notes=25))
    assert not index.is_common("tags")     # 20 notes: above 1% of 40, but not above the floor of 25


def test_the_common_limit_stops_growing_at_the_ceiling() -> None:
    """max(common_min_notes, min(max_note_share x N, common_max_notes)), worked for the shipped numbers
    (3%, floor 20, ceiling 300): the share decides between 667 and 10,000 notes, the ceiling above."""
    shipped = MentionSettings()
    assert (shipped.max_note_share, shipped.common_min_notes, shipped.common_max_notes) == (0.03, 20, 300)
    assert common_limit(shipped, 0) == float("inf")          # nothing counted: no name is common
    assert common_limit(shipped, 100) == 20                  # 3 notes by the share: the floor holds
    assert common_limit(shipped, 1_000) == 30                # 3% of 1,000
    assert common_limit(shipped, 10_000) == 300              # 3% of 10,000 = the ceiling
    assert common_limit(shipped, 30_000) == 300              # 3% would be 900
    assert common_limit(shipped.model_copy(update={"common_max_notes": None}), 30_000) == 900
    # the floor wins over a ceiling below it
    assert common_limit(MentionSettings(common_min_notes=50, common_max_notes=10), 30_000) == 50


def test_a_name_above_the_ceiling_is_common_whatever_the_share(types_config) -> None:
    """40 notes, "Tags" named in 20 (50%): under a share of 60% it links, unless more than 15 notes is the
    ceiling; "Quantenschaum" (2 notes) links either way."""
    notes = _vault(types_config, naming_tags=20)
    shares_only = MentionSettings(max_note_share=0.6, common_min_notes=5, short_title_chars=4,
                                  common_max_notes=None)
    index = MentionIndex(notes, shares_only)
    assert index.common_limit() == 24 and not index.is_common("tags")
    assert mentions_of(notes[2], notes, types_config, index) == [("qs", 0.4), ("tags", 0.4)]
    index = MentionIndex(notes, shares_only.model_copy(update={"common_max_notes": 15}))
    assert index.common_limit() == 15 and index.is_common("tags") and not index.is_common("quantenschaum")
    assert mentions_of(notes[2], notes, types_config, index) == [("qs", 0.4)]
    assert index.common_names() == [("tags", 20)]


def test_short_names_are_damped_by_characters_and_words(types_config) -> None:
    notes = [note("---\nid: jo\ntitle: jo\n---\nperson", "people/jo.md", types_config),
             note("---\nid: ab\ntitle: AB Test\n---\nmethod", "concepts/ab.md", types_config),
             note("---\nid: x\n---\n# X\n\nasked jo about the AB Test", "x.md", types_config)]
    settings = MentionSettings(min_title_length=2, short_title_chars=8, short_title_words=2, short_damping=0.5)
    index = MentionIndex(notes, settings)
    assert index.is_short("jo") and not index.is_short("ab test")   # 7 characters but two words
    assert mentions_of(notes[2], notes, types_config, index) == [("ab", 0.4), ("jo", 0.2)]
    index = MentionIndex(notes, settings.model_copy(update={"short_damping": 0.0}))
    assert mentions_of(notes[2], notes, types_config, index) == [("ab", 0.4)]


def test_mention_edges_per_note_are_capped_most_specific_first(types_config) -> None:
    titles = ["Alpha Centauri Station", "Betelgeuse", "Cassiopeia", "Deneb Algedi", "Eltanin"]
    notes = [note(f"---\nid: t{i}\ntitle: {t}\n---\ntext", f"t{i}.md", types_config) for i, t in enumerate(titles)]
    body = "\n\n".join(f"## Part {i}\n\n" + " ".join(titles) + " " + "filler " * 120 for i in range(3))
    src = note(f"---\nid: src\n---\n# Source\n\n{body}", "projects/src.md", types_config)   # by_heading: 3 chunks
    notes.append(src)
    uncapped = mentions_of(src, notes, types_config, MentionIndex(notes, MentionSettings()))
    assert len(uncapped) == 15     # five names in each of three chunks
    capped = mentions_of(src, notes, types_config, MentionIndex(notes, MentionSettings(max_per_note=4)))
    assert len(capped) == 4
    assert {t for t, _ in capped} <= {"t0", "t3"}   # the longest (most specific) names first


def test_the_import_reports_top_mention_sources_and_common_names(tmp_path, make_app) -> None:
    files = {"concepts/tags.md": "# Tags\n\nhow I tag", "concepts/deep.md": "# Tiefsee Laterne\n\nfish"}
    for i in range(30):
        extra = " Tiefsee Laterne" * (i < 3)
        files[f"n{i:02d}.md"] = f"# N{i:02d}\n\nsee Tags and more{extra}"
    write_vault(tmp_path / "vault", files)
    types = write_types(tmp_path / "types.yaml", **{"mentions.common_min_notes": 10})
    app = make_app(types_config=types)
    data = app.ingest().as_dict()
    assert data["mention_common"] == [{"name": "tags", "notes": 30}]
    assert data["edges_by_kind"]["mentions"] == 3
    assert data["mention_sources_top"] == [{"note": f"n{i:02d}.md", "mentions": 1} for i in range(3)]
    # retrieval still follows the mentions that are left
    hit = app.query(QueryRequest(query="Tiefsee Laterne fish", mode="hybrid", expand=ExpandRequest(depth=1),
                                 explain=True))
    assert hit["hits"]
