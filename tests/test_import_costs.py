"""The import's hot helpers, rewritten for cost (issue 13, growth 10,000 -> 30,000 notes), give exactly what the
straightforward versions gave: edge payloads (key order included) and mention spans."""

from __future__ import annotations

import json
import random
from dataclasses import asdict, fields

from mindnet.indexing.edges import Edge
from mindnet.indexing.mentions import MentionIndex
from mindnet.settings import MentionSettings
from mindnet.vault.note import Note


def _payload_by_asdict(edge: Edge) -> dict:
    """The payload as `Edge.payload` built it before (dataclasses.asdict)."""
    data = asdict(edge)
    del data["extra_kinds"]
    if not edge.extra_kinds:
        del data["default_rule"], data["default_confidence"]
    for key, unset in (("anchor", None), ("resolved_by", None), ("target_chunk", None)):   # issue 22: when set
        if data[key] is unset:
            del data[key]
    if edge.candidates <= 1:
        del data["candidates"]
    data["kinds"] = edge.kinds
    data["edge_id"] = edge.edge_id
    return data


def test_edge_payload_is_the_asdict_payload_key_order_included() -> None:
    edges = [
        Edge("c1", "n2", "references", "explicit:wikilink", 1.0, "n1", target_text="N2",
             extra_kinds=("related_to",), default_rule="edge_defaults:concept", default_confidence=0.7),
        Edge("c1", "n3", "references", "explicit:wikilink", 1.0, "n1", target_text="N3",
             extra_kinds=("related_to", "depends_on"), default_rule="edge_defaults:project", default_confidence=0.5),
        Edge("c1", "n1", "belongs_to", "structure:belongs_to", 1.0, "n1"),
        Edge("c1", "Missing", "references", "explicit:wikilink", 1.0, "n1", resolved=False, target_text="Missing"),
        Edge("c1", "img.png", "attachment", "explicit:embed", 1.0, "n1", scope="note", resolved=False,
             target_text="img.png"),
        Edge("c1", "n4", "mentions", "mention:title", 0.35, "n1", target_text="jo"),
        Edge("c1", "n5", "references", "explicit:markdown", 1.0, "n1", target_text="n5.md", anchor="Setup",
             resolved_by="name", candidates=2, target_chunk="n5#c02"),
    ]
    for edge in edges:
        expected = _payload_by_asdict(edge)
        got = edge.payload()
        assert got == expected
        assert list(got) == list(expected)
        assert json.dumps(got) == json.dumps(expected)      # what Qdrant stores and the edges hash reads


def test_edge_payload_covers_every_field() -> None:
    """A field added to Edge must reach the payload (or be named here as kept out of it on purpose)."""
    represented = set(_payload_by_asdict(Edge("a", "b", "k", "r", 1.0, "n", extra_kinds=("x",),
                                              default_rule="d", default_confidence=0.5, anchor="h",
                                              resolved_by="name", candidates=2, target_chunk="b#c01")))
    assert {f.name for f in fields(Edge)} - {"extra_kinds"} <= represented


def _spans_by_pairs(index: MentionIndex, hay: str) -> list:
    """`MentionIndex.spans` as it was: every span compared with every span taken before it."""
    spans = []
    for end, (key, ids) in index._automaton.iter(hay):
        start = end - len(key) + 1
        if (start > 0 and (hay[start - 1].isalnum() or hay[start - 1] == "_")) or \
                (end + 1 < len(hay) and (hay[end + 1].isalnum() or hay[end + 1] == "_")):
            continue
        spans.append((start, end, key, ids))
    spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
    taken = []
    for span in spans:
        if any(span[0] <= e and s <= span[1] for s, e, _, _ in taken):
            continue
        taken.append(span)
    return taken


def _note(note_id: str, title: str) -> Note:
    return Note(note_id=note_id, path=f"{note_id}.md", title=title, type="concept", aliases=[], tags=[],
                frontmatter={}, body="", body_line=1, content_hash="")


def test_mention_spans_are_the_pairwise_overlap_spans() -> None:
    names = ["pagerank", "personalized pagerank", "page", "rank", "personalized", "jo", "jo jo", "a b c", "b c d",
             "c", "tags", "tag", "canvas", "inbox zero", "zero", "x_y", "über", "straße"]
    notes = [_note(f"n{i}", name) for i, name in enumerate(names)] + [_note("dup", "Page")]  # a shared name
    index = MentionIndex(notes, MentionSettings(min_title_length=1))
    words = names + ["the", "and", "b", "d", "a", "_", "x", "y", "pager", "ranks", "-", ".", "\n"]
    rng = random.Random(13)
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 80))) for _ in range(400)]
    texts += ["", "personalized pagerank", "a b c d", "jo jo jo", "x_y x y", "straße über straßen"]
    matched = 0
    for text in texts:
        hay = text.casefold()
        expected = _spans_by_pairs(index, hay)
        assert index.spans(hay) == expected, text
        matched += len(expected)
    assert matched > 2000     # the texts really overlap names


def test_body_spans_are_counted_once_and_follow_a_changed_body() -> None:
    notes = [_note("a", "Alpha Beta"), _note("b", "Gamma")]
    notes[0].body, notes[1].body = "gamma and [[Gamma]] and `gamma`", "alpha beta, gamma"
    index = MentionIndex(notes, MentionSettings(min_title_length=1))
    first = index.body_spans(notes[1])
    assert index.body_spans(notes[1]) is first                        # kept from count_notes
    assert [s[2] for s in first] == ["alpha beta", "gamma"]
    assert [s[2] for s in index.body_spans(notes[0])] == ["gamma"]      # link text stripped, code masked
    edited = _note("b", "Gamma")
    edited.body = "only gamma here"
    assert [s[2] for s in index.body_spans(edited)] == ["gamma"]      # same id, another text: scanned again
