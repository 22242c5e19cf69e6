"""normalize_meta_and_body and empty_draft on well-formed and malformed LLM replies."""

from __future__ import annotations

from datetime import datetime

import pytest
import yaml

from mindnet.chat.sanitizer import (
    DEFAULT_TITLE,
    NoteDraft,
    empty_draft,
    make_note_id,
    normalize_meta_and_body,
    slugify,
)
from mindnet.settings import InterviewSchema

NOW = datetime(2025, 3, 4, 12, 30)
DECISION = InterviewSchema(aliases=["entscheidung"], required=["title", "status", "decision"],
                           optional=["alternatives", "date"],
                           sections=["Kontext", "Entscheidung", "Alternativen", "Konsequenzen"])
ALLOWED = {"type", "id", "title", "created", "tags", "aliases", "status", "decision", "alternatives", "date"}

GOOD = """---
title: Hosting wählen
status: entschieden
decision: Hetzner
---
## Kontext
Wir brauchen einen Server.
"""


def run(reply: str, schema: InterviewSchema = DECISION) -> NoteDraft:
    return normalize_meta_and_body(reply, note_type="decision", schema=schema, now=NOW)


def split(markdown: str) -> tuple[dict, str]:
    """Frontmatter and body of a saved note, the way a vault reader sees them."""
    assert markdown.startswith("---\n")
    meta, _, body = markdown[4:].partition("\n---\n")
    return yaml.safe_load(meta), body


# --------------------------------------------------------------------------- malformed replies

MALFORMED = {
    "no code block": GOOD,
    "chatter around a code block": f"Hier ist der Entwurf:\n```markdown\n{GOOD}```\nViel Erfolg!",
    "md info string": f"```md\n{GOOD}```",
    "bare fence": f"```\n{GOOD}```",
    "two code blocks": f"```markdown\n## Beispiel\nnur ein Beispiel\n```\n\n```markdown\n{GOOD}```",
    "unclosed code block": f"```markdown\n{GOOD}",
    "broken yaml": "---\ntitle: Plan B: Umzug\nstatus: [offen\ndecision: Umziehen\n---\nText\n",
    "fields as a list": "---\n- title: Hosting\n- status: offen\n- decision: Hetzner\n---\nText\n",
    "invented fields": "---\ntitle: X\nSituation: Streit\nGefühl:\n  - wütend\n  - müde\n---\n",
    "body with --- lines": "---\ntitle: X\n---\n---\nfoo: bar\n---\nText\n---\nMehr\n",
    "unicode": "---\ntitle: Größe & Maß 🚀\nstatus: offen\ndecision: 日本語\n---\nÄrger über Öl\n",
    "empty reply": "",
    "whitespace reply": "  \n\n ",
    "crlf": GOOD.replace("\n", "\r\n"),
    "unclosed frontmatter": "---\ntitle: Offen\nstatus: offen\n# Offen\n\nText ohne Ende\n",
    "unreadable frontmatter": "---\n[[[\n{{{\n---\nNur Text\n",
    "only prose": "Ich habe mich für Hetzner entschieden, weil es günstig ist.",
    "yaml block": "```yaml\ntitle: Nur YAML\nstatus: offen\n```",
    "preamble without code block": f"Gern, hier ist die Notiz:\n\n{GOOD}",
    "comma tags": "---\ntitle: X\ntags: a, b, c d\naliases: Eins, Zwei Drei\n---\n",
    "nested code": "```markdown\n---\ntitle: Code\n---\n## Kontext\n```python\nprint(1)\n```\nDanach\n```",
}


@pytest.mark.parametrize("reply", MALFORMED.values(), ids=MALFORMED.keys())
def test_frontmatter_has_only_allowed_fields(reply: str) -> None:
    assert set(run(reply).frontmatter) <= ALLOWED


@pytest.mark.parametrize("reply", MALFORMED.values(), ids=MALFORMED.keys())
def test_output_yaml_round_trips(reply: str) -> None:
    draft = run(reply)
    assert split(draft.to_markdown())[0] == draft.frontmatter


@pytest.mark.parametrize("reply", MALFORMED.values(), ids=MALFORMED.keys())
def test_normalizing_the_output_again_changes_nothing(reply: str) -> None:
    first = run(reply)
    second = run(first.to_markdown())
    assert (second.frontmatter, second.body) == (first.frontmatter, first.body)


@pytest.mark.parametrize("reply", MALFORMED.values(), ids=MALFORMED.keys())
def test_body_has_every_schema_section(reply: str) -> None:
    headings = [line for line in run(reply).body.splitlines() if line.startswith("## ")]
    assert {f"## {s}" for s in DECISION.sections} <= set(headings)


@pytest.mark.parametrize("reply", MALFORMED.values(), ids=MALFORMED.keys())
def test_body_never_starts_with_a_fence(reply: str) -> None:
    assert not run(reply).body.lstrip().startswith("---")


@pytest.mark.parametrize("reply", MALFORMED.values(), ids=MALFORMED.keys())
def test_required_fields_always_present(reply: str) -> None:
    meta = run(reply).frontmatter
    assert [f for f in DECISION.required if f not in meta] == []


@pytest.mark.parametrize(("case", "title"), [
    ("no code block", "Hosting wählen"),
    ("chatter around a code block", "Hosting wählen"),
    ("md info string", "Hosting wählen"),
    ("bare fence", "Hosting wählen"),
    ("two code blocks", "Hosting wählen"),
    ("unclosed code block", "Hosting wählen"),
    ("broken yaml", "Plan B: Umzug"),
    ("fields as a list", "Hosting"),
    ("unicode", "Größe & Maß 🚀"),
    ("empty reply", DEFAULT_TITLE),
    ("whitespace reply", DEFAULT_TITLE),
    ("crlf", "Hosting wählen"),
    ("unclosed frontmatter", "Offen"),
    ("unreadable frontmatter", "Nur Text"),
    ("only prose", "Ich habe mich für Hetzner entschieden, weil es günstig ist."),
    ("yaml block", "Nur YAML"),
    ("preamble without code block", "Hosting wählen"),
    ("nested code", "Code"),
])
def test_title(case: str, title: str) -> None:
    draft = run(MALFORMED[case])
    assert (draft.title, draft.frontmatter["title"]) == (title, title)


@pytest.mark.parametrize(("case", "warning"), [
    ("two code blocks", "the reply had 2 code blocks; used the one with frontmatter"),
    ("unclosed code block", "the code block was not closed; used the text up to the end of the reply"),
    ("fields as a list", "the frontmatter was a list of fields; merged them into one mapping"),
    ("body with --- lines", "the body started with a second frontmatter; merged its fields"),
    ("empty reply", "the reply was empty; started an empty draft"),
    ("unclosed frontmatter", "the frontmatter had no closing '---'; closed it before line 4 of the draft"),
    ("preamble without code block", "dropped the text before the frontmatter: Gern, hier ist die Notiz:"),
])
def test_repairs_are_reported(case: str, warning: str) -> None:
    assert warning in run(MALFORMED[case]).warnings


def test_good_reply_has_no_warnings() -> None:
    assert run(GOOD).warnings == []


def test_good_reply_frontmatter() -> None:
    assert run(GOOD).frontmatter == {
        "type": "decision", "id": make_note_id("Hosting wählen", "2025-03-04"), "title": "Hosting wählen",
        "status": "entschieden", "decision": "Hetzner", "created": "2025-03-04"}


def test_good_reply_body() -> None:
    assert run(GOOD).body == ("## Kontext\nWir brauchen einen Server.\n\n## Entscheidung\n\n"
                              "## Alternativen\n\n## Konsequenzen\n")


def test_crlf_gives_the_same_note_as_lf() -> None:
    assert run(MALFORMED["crlf"]) == run(GOOD)


def test_longest_block_wins_without_frontmatter() -> None:
    reply = "```markdown\n# Kurz\n```\n```markdown\n# Lang und ausführlich\nText\n```"
    assert run(reply).title == "Lang und ausführlich"


def test_other_language_blocks_are_not_the_draft() -> None:
    reply = "---\ntitle: Skript\n---\n## Kontext\n```python\nprint(1)\n```\n"
    assert "```python\nprint(1)\n```" in run(reply).body


def test_nested_code_block_is_kept_in_the_body() -> None:
    assert run(MALFORMED["nested code"]).body.startswith("## Kontext\n```python\nprint(1)\n```\nDanach\n")


def test_broken_yaml_is_read_line_by_line() -> None:
    meta = run(MALFORMED["broken yaml"]).frontmatter
    assert (meta["status"], meta["decision"]) == ("[offen", "Umziehen")


def test_unreadable_frontmatter_moves_to_the_body() -> None:
    draft = run(MALFORMED["unreadable frontmatter"])
    assert draft.body.startswith("[[[\n{{{\n\nNur Text\n")


def test_invented_text_field_becomes_a_section() -> None:
    assert "## Situation\n\nStreit\n" in run(MALFORMED["invented fields"]).body


def test_invented_list_field_becomes_a_bullet_list() -> None:
    assert "## Gefühl\n\n- wütend\n- müde\n" in run(MALFORMED["invented fields"]).body


def test_invented_mapping_field_becomes_bold_bullets() -> None:
    draft = run("---\ntitle: X\nBewertung:\n  Kosten: hoch\n  Nutzen: mittel\n---\n")
    assert "## Bewertung\n\n- **Kosten:** hoch\n- **Nutzen:** mittel\n" in draft.body


def test_invented_field_joins_the_section_of_the_same_name() -> None:
    draft = run("---\ntitle: X\nkontext: Aus dem Frontmatter\n---\n"
                "## Kontext\nAus dem Text\n\n## Entscheidung\nJa\n")
    assert draft.body.startswith("## Kontext\nAus dem Text\n\nAus dem Frontmatter\n\n## Entscheidung\nJa\n")


def test_empty_invented_field_is_dropped() -> None:
    draft = run("---\ntitle: X\nMood:\n---\n")
    assert ("Mood" not in draft.body, "dropped the empty field 'Mood' (not a field of the decision schema)"
            in draft.warnings) == (True, True)


def test_snake_case_invented_field_heading() -> None:
    assert "## Next steps\n\nAnrufen" in run("---\ntitle: X\nnext_steps: Anrufen\n---\n").body


def test_second_frontmatter_fields_are_merged() -> None:
    draft = run(MALFORMED["body with --- lines"])
    assert "## Foo\n\nbar" in draft.body


def test_rule_in_body_gets_a_blank_line_before_it() -> None:
    assert "Text\n\n---\nMehr" in run(MALFORMED["body with --- lines"]).body


def test_leading_rule_without_fields_is_removed() -> None:
    draft = run("---\ntitle: X\n---\n---\nText\n")
    assert draft.body.startswith("Text\n")


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("Title", "Gross", {"title": "Gross"}),
    ("STATUS", "offen", {"status": "offen"}),
    ("Alternatives", "[A, B]", {"alternatives": ["A", "B"]}),
])
def test_allowed_keys_match_case_insensitively(key: str, value: str, expected: dict) -> None:
    meta = run(f"---\n{key}: {value}\n---\n").frontmatter
    assert {k: meta[k] for k in expected} == expected


def test_tags_from_a_comma_string() -> None:
    assert run(MALFORMED["comma tags"]).frontmatter["tags"] == ["a", "b", "c", "d"]


def test_aliases_from_a_comma_string_keep_spaces() -> None:
    assert run(MALFORMED["comma tags"]).frontmatter["aliases"] == ["Eins", "Zwei Drei"]


def test_tag_list_items_lose_their_hash_and_duplicates() -> None:
    assert run("---\ntitle: X\ntags: ['#a', 'b, c', a]\n---\n").frontmatter["tags"] == ["a", "b", "c"]


def test_type_is_always_the_note_type() -> None:
    draft = run("---\ntitle: X\ntype: project\n---\n")
    assert (draft.frontmatter["type"], draft.note_type) == ("decision", "decision")


@pytest.mark.parametrize(("given", "created"), [
    ("2024-12-01", "2024-12-01"),
    ("'2024-12-01T08:00:00'", "2024-12-01"),
    ("gestern", "2025-03-04"),
    ("2024-13-45", "2025-03-04"),
])
def test_created(given: str, created: str) -> None:
    assert run(f"---\ntitle: X\ncreated: {given}\n---\n").frontmatter["created"] == created


def test_dates_become_iso_strings() -> None:
    assert run("---\ntitle: X\ndate: 2024-05-01\n---\n").frontmatter["date"] == "2024-05-01"


@pytest.mark.parametrize(("given", "kept"), [("my-note_1.v2", True), ("../etc", False), ("a b", False)])
def test_given_id_is_kept_only_when_valid(given: str, kept: bool) -> None:
    draft = run(f"---\ntitle: X\nid: '{given}'\n---\n")
    assert (draft.note_id == given, draft.frontmatter["id"] == draft.note_id) == (kept, True)


def test_id_is_deterministic_from_title_and_created() -> None:
    assert run("---\ntitle: Größe & Maß\n---\n").note_id == make_note_id("Größe & Maß", "2025-03-04")


@pytest.mark.parametrize(("title", "slug"), [
    ("Größe & Maß", "groesse-mass"),
    ("  Hello,  World!  ", "hello-world"),
    ("日本語", ""),
    ("Café Crème", "cafe-creme"),
])
def test_slugify(title: str, slug: str) -> None:
    assert slugify(title) == slug


def test_id_without_ascii_title_uses_note_prefix() -> None:
    assert make_note_id("日本語", "2025-03-04").startswith("note-")


def test_missing_required_fields_are_empty_and_reported() -> None:
    draft = run("---\ntitle: X\n---\n")
    assert ((draft.frontmatter["status"], draft.frontmatter["decision"]),
            [w for w in draft.warnings if w.startswith("required")]) == (
        ("", ""), ["required field 'status' is empty; fill it in before saving",
                   "required field 'decision' is empty; fill it in before saving"])


def test_frontmatter_field_order() -> None:
    draft = run("---\ntags: [x]\ndecision: D\nstatus: S\ntitle: T\nalternatives: [A]\n---\n")
    assert list(draft.frontmatter) == ["type", "id", "title", "status", "decision", "alternatives",
                                       "created", "tags"]


def test_existing_section_is_not_added_twice() -> None:
    body = run("---\ntitle: X\n---\n## kontext\nText\n").body
    assert body.count("ontext") == 1


def test_headings_inside_code_do_not_count_as_sections() -> None:
    body = run("---\ntitle: X\n---\n```\n## Kontext\n```\n").body
    assert body.count("## Kontext") == 2


def test_unicode_is_written_unescaped() -> None:
    assert "title: Größe & Maß 🚀" in run(MALFORMED["unicode"]).to_markdown()


def test_to_markdown_layout() -> None:
    draft = NoteDraft(frontmatter={"title": "T"}, body="Text\n", title="T", note_type="concept", note_id="t")
    assert draft.to_markdown() == "---\ntitle: T\n---\n\nText\n"


def test_to_markdown_without_body() -> None:
    draft = NoteDraft(frontmatter={"title": "T"}, body="", title="T", note_type="concept", note_id="t")
    assert draft.to_markdown() == "---\ntitle: T\n---\n"


# --------------------------------------------------------------------------- empty_draft


def test_empty_draft_frontmatter() -> None:
    draft = empty_draft("decision", DECISION, now=NOW)
    assert draft.frontmatter == {
        "type": "decision", "id": make_note_id(DEFAULT_TITLE, "2025-03-04"), "title": DEFAULT_TITLE,
        "status": "", "decision": "", "alternatives": "", "date": "", "created": "2025-03-04"}


def test_empty_draft_body_has_the_sections() -> None:
    assert empty_draft("decision", DECISION, now=NOW).body == (
        "## Kontext\n\n## Entscheidung\n\n## Alternativen\n\n## Konsequenzen\n")


def test_empty_draft_with_title() -> None:
    draft = empty_draft("decision", DECISION, title="Umzug", now=NOW)
    assert (draft.title, draft.warnings) == ("Umzug", [])


def test_empty_draft_tags_are_a_list() -> None:
    schema = InterviewSchema(required=["title"], optional=["tags"])
    assert empty_draft("concept", schema, now=NOW).frontmatter["tags"] == []


def test_empty_draft_survives_normalizing() -> None:
    draft = empty_draft("decision", DECISION, now=NOW)
    again = run(draft.to_markdown())
    assert (again.frontmatter, again.body) == (draft.frontmatter, draft.body)
