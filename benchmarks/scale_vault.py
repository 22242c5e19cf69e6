r"""A synthetic linked vault of realistic shape for the scale benchmark (deterministic by seed).

    python -m benchmarks.bench_scale --notes 10000 --generate-only OUT

The shape follows what real community vaults look like (the 6,556-note vault of issue 13):
- titles of every length: people's short handles ("jo", "mkx"), common words ("Tags", "Canvas", "Inbox"),
  dates for daily notes, and 1-5 word concept/project titles;
- daily notes in `journal/` (`2021-03-04.md`), short, linking people and projects;
- MOC notes in `maps/` linking 50-200 notes each (index notes, the hubs of the graph);
- 5-10 wikilinks per note, some `[[Title|alias]]`, some `[[folder/Title\|Alias]]` in a table (as Obsidian
  writes them there), link targets drawn with a heavy tail (a few notes are linked from many);
- titles named in plain text without a link (the unlinked mentions), common words most of all;
- frontmatter with `type` (most notes; the rest are typed by folder), `tags`, `created`, some `aliases`;
  inline `#tags`;
- text drawn from a Zipf-distributed vocabulary, so BM25 sees realistic term statistics.
Nothing here is random across runs: the same `notes` and `seed` give byte-identical files.
"""

from __future__ import annotations

import itertools
import random
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

COMMON_TITLES = ["Tags", "Canvas", "Inbox", "Ideas", "Notes", "Meeting", "Todo", "Books", "Home", "Work",
                 "Reading", "Links", "Draft", "Archive", "Index", "Summary", "Review", "Plan", "Goals", "Health"]
FUNCTION_WORDS = ("the of and to a in is that for it as with was on be by this are or from at an not but "
                  "have which one we all can has more when there about so if what their also into only other "
                  "some time how new use used work way like then than these first make any each may").split()
KIND_FOLDERS = {"concept": "concepts", "project": "projects", "decision": "decisions", "source": "sources",
                "task": "tasks", "value": "values"}
TOPIC_KINDS = ["concept"] * 5 + ["project"] * 2 + ["decision", "source", "source", "task", "value"]
CONSONANTS = "bcdfghjklmnprstvwz"
VOWELS = "aeiou"


@dataclass
class PlannedNote:
    index: int
    title: str
    path: str                 # relative to the vault root
    kind: str                 # daily | moc | person | common | concept | project | ...
    type: str                 # the frontmatter type (types.yaml), written for most notes
    topic: int
    links: list[int] = field(default_factory=list)


@dataclass
class ScaleVault:
    """What was generated: the notes (by index), and benchmark queries (text, note index it came from)."""
    root: Path
    notes: list[PlannedNote]
    queries: list[tuple[str, int]]
    words: int = 0
    wikilinks: int = 0

    def count(self, kind: str) -> int:
        return sum(1 for n in self.notes if n.kind == kind)


class _Zipf:
    """Draws items with weight 1 / rank**s: fast bulk draws through cumulative weights."""

    def __init__(self, items: list, s: float = 1.05) -> None:
        self.items = items
        self.cum = list(itertools.accumulate(1.0 / (r ** s) for r in range(1, len(items) + 1)))

    def draw(self, rng: random.Random, k: int = 1) -> list:
        return rng.choices(self.items, cum_weights=self.cum, k=k)

    def one(self, rng: random.Random):
        return self.items[bisect_left(self.cum, rng.random() * self.cum[-1])]


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(syllables)) + \
        (rng.choice(CONSONANTS) if rng.random() < 0.5 else "")


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    seen: set[str] = set(FUNCTION_WORDS)
    words: list[str] = []
    while len(words) < size:
        w = _word(rng, rng.choice((1, 2, 2, 3, 3, 4)))
        if w not in seen and len(w) > 2:
            seen.add(w)
            words.append(w)
    return words


def _plan(notes: int, rng: random.Random, vocab: list[str]) -> list[PlannedNote]:
    """Titles, paths, kinds and topics for `notes` notes."""
    n_moc = max(1, notes // 150)
    n_daily = notes * 15 // 100
    n_person = notes * 8 // 100
    n_common = min(len(COMMON_TITLES), max(0, notes // 50))
    n_topic = max(0, notes - n_moc - n_daily - n_person - n_common)
    n_topics = max(1, n_moc)
    titles: set[str] = set()
    planned: list[PlannedNote] = []

    def unique(title: str) -> str:
        base, k = title, 2
        while title.casefold() in titles:
            title, k = f"{base} {k}", k + 1
        titles.add(title.casefold())
        return title

    def add(title: str, folder: str, kind: str, type_: str) -> None:
        t = unique(title)
        planned.append(PlannedNote(len(planned), t, f"{folder}/{t}.md", kind, type_, rng.randrange(n_topics)))

    for i in range(n_moc):
        add(f"{vocab[200 + i].capitalize()} MOC", "maps", "moc", "concept")
        planned[-1].topic = i
    start = date(2019, 1, 1)
    for i in range(n_daily):
        add((start + timedelta(days=i)).isoformat(), "journal", "daily", "experience")
    for _ in range(n_person):
        if rng.random() < 0.5:    # a handle: 2-4 letters, the kind of title that matches everywhere
            title = "".join(rng.choice(CONSONANTS + VOWELS) for _ in range(rng.choice((2, 3, 3, 4))))
            if title in FUNCTION_WORDS:
                title += rng.choice(CONSONANTS)
        else:
            title = f"{_word(rng, 2).capitalize()} {_word(rng, 3).capitalize()}"
        add(title, "people", "person", "person")
    for title in COMMON_TITLES[:n_common]:
        add(title, "concepts", "common", "concept")
    for _ in range(n_topic):
        kind = rng.choice(TOPIC_KINDS)
        length = rng.choice((1, 2, 2, 3, 3, 3, 4, 5))
        # title words come from the middle of the vocabulary: neither function words nor hapaxes
        words = [vocab[rng.randrange(50, min(len(vocab), 4000))] for _ in range(length)]
        add(" ".join(w.capitalize() if j == 0 else w for j, w in enumerate(words)), KIND_FOLDERS[kind],
            kind, kind)
    return planned


def _sentence(rng: random.Random, zipf: _Zipf, length: int) -> list[str]:
    return zipf.draw(rng, length)


def _link(target: PlannedNote, rng: random.Random, table: bool = False) -> str:
    if table:   # Obsidian escapes the pipe of an aliased link inside a table row
        return f"[[{target.path.removesuffix('.md')}\\|{target.title.split()[0]}]]"
    if rng.random() < 0.2:
        return f"[[{target.title}|{target.title.lower()}]]"
    return f"[[{target.title}]]"


def _links(note: PlannedNote, planned: list[PlannedNote], by_topic: dict[int, list[int]],
           popular: _Zipf, people: list[int], projects: list[int], rng: random.Random) -> list[int]:
    """Link targets: MOCs link 50-200 notes of their topic; dailies link people and projects; other notes
    link within their topic, to popular notes (heavy tail) and to their MOC."""
    if note.kind == "moc":
        pool = [i for i in by_topic.get(note.topic, []) if planned[i].kind != "moc"]
        want = min(len(planned) - 1, rng.randint(50, 200))
        extra = [i for i in popular.draw(rng, want * 2) if i != note.index]
        return list(dict.fromkeys(pool[:want] + extra))[:want]
    want = rng.randint(5, 10)
    out: list[int] = []
    tries = 0
    while len(out) < want and tries < want * 6:
        tries += 1
        r = rng.random()
        if note.kind == "daily" and people and r < 0.4:
            target = rng.choice(people)
        elif note.kind == "daily" and projects and r < 0.6:
            target = rng.choice(projects)
        elif r < 0.45 and by_topic.get(note.topic):
            target = rng.choice(by_topic[note.topic])
        elif r < 0.5:
            target = note.topic   # the topic's MOC (MOCs come first, index = topic)
        else:
            target = popular.one(rng)
        if target != note.index and target not in out and target < len(planned):
            out.append(target)
    return out


def _body(note: PlannedNote, planned: list[PlannedNote], zipf: _Zipf, mention_pool: _Zipf,
          rng: random.Random, tags: list[str]) -> tuple[str, str, int]:
    """The Markdown text of a note, a query taken from it, and its word count."""
    note_tags = rng.sample(tags, rng.randint(1, 3))
    front = ["---"]
    if rng.random() < 0.8 or note.kind in ("moc", "common"):
        front.append(f"type: {note.type}")
    front.append(f"tags: [{', '.join(note_tags)}]")
    front.append(f"created: {date(2019, 1, 1) + timedelta(days=note.index % 1500)}")
    if note.kind in ("concept", "project") and rng.random() < 0.1:
        front.append(f"aliases: [\"{note.title.lower()} alias\"]")
    front.append("---")
    lines = [f"# {note.title}", ""]
    links = [planned[i] for i in note.links]
    if note.kind == "moc":
        lines.append(" ".join(_sentence(rng, zipf, 20)) + ".")
        lines.append("")
        for start in range(0, len(links), 25):
            lines.append(f"## {' '.join(_sentence(rng, zipf, 2)).capitalize()}")
            lines.extend(f"- {_link(t, rng)}" for t in links[start:start + 25])
            lines.append("")
        text = "\n".join(front + lines)
        return text, " ".join(links[0].title.split()[:3]) if links else note.title, len(text.split())
    sections = 1 if note.kind in ("daily", "person") else rng.choice((2, 3, 3, 4))
    words_per_section = rng.randint(40, 110) if sections == 1 else rng.randint(70, 160)
    link_slots = list(links)
    use_table = len(link_slots) >= 3 and rng.random() < 0.15
    table_links = link_slots[:3] if use_table else []
    link_slots = link_slots[3:] if use_table else link_slots
    query = ""
    total = 0
    for _s in range(sections):
        if sections > 1:
            lines.append(f"## {' '.join(_sentence(rng, zipf, rng.randint(1, 3))).capitalize()}")
            lines.append("")
        words: list[str] = []
        while len(words) < words_per_section:
            sentence = _sentence(rng, zipf, rng.randint(6, 18))
            if rng.random() < 0.35:   # a title named without a link (an unlinked mention)
                sentence.insert(rng.randrange(len(sentence) + 1), planned[mention_pool.one(rng)].title)
            if link_slots and rng.random() < 0.6:
                sentence.insert(rng.randrange(len(sentence) + 1), _link(link_slots.pop(), rng))
            if rng.random() < 0.05:
                sentence.append(f"#{rng.choice(tags)}")
            sentence[0] = sentence[0].capitalize()
            words.extend(sentence)
            words[-1] += "."
        if not query:
            plain = [w.strip(".") for w in words if "[[" not in w and "]]" not in w and not w.startswith("#")]
            cut = rng.randrange(max(1, len(plain) - 8))
            query = " ".join(plain[cut:cut + rng.randint(4, 8)]).strip(".")
        lines.append(" ".join(words))
        lines.append("")
        total += len(words)
    if link_slots:
        lines.append("See also: " + ", ".join(_link(t, rng) for t in link_slots))
        lines.append("")
    if table_links:
        lines += ["| Note | Why |", "|---|---|"]
        lines += [f"| {_link(t, rng, table=True)} | {' '.join(_sentence(rng, zipf, 4))} |" for t in table_links]
        lines.append("")
    return "\n".join(front + lines), query, total


def generate_vault(out: Path, notes: int, *, seed: int = 13, queries: int = 200) -> ScaleVault:
    """Write a vault of `notes` notes to `out` (created; must be empty or absent) and return its plan."""
    if notes < 10:
        raise ValueError(f"--notes {notes}: a scale vault needs at least 10 notes")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty; give a new folder for the generated vault")
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 12000)
    # text vocabulary: function words first (most frequent), the common-word titles among the frequent words
    text_words = FUNCTION_WORDS[:20] + [w.lower() for w in COMMON_TITLES[:8]] + FUNCTION_WORDS[20:] + vocab
    zipf = _Zipf(text_words, 1.0)
    planned = _plan(notes, rng, vocab)
    by_topic: dict[int, list[int]] = {}
    for n in planned:
        if n.kind not in ("moc", "daily"):
            by_topic.setdefault(n.topic, []).append(n.index)
    non_daily = [n.index for n in planned if n.kind != "daily"]
    rng.shuffle(non_daily)
    popular = _Zipf(non_daily, 0.9)
    # names said in passing: people (handles!) and common words most, any other title now and then
    mention_order = [n.index for n in planned if n.kind in ("person", "common")]
    rng.shuffle(mention_order)
    rest = [n.index for n in planned if n.kind not in ("person", "common", "daily")]
    rng.shuffle(rest)
    mention_pool = _Zipf(mention_order + rest, 0.8)
    people = [n.index for n in planned if n.kind == "person"]
    projects = [n.index for n in planned if n.kind == "project"]
    tags = [f"{w}" for w in vocab[100:160]] + ["status/open", "status/done", "area/work", "area/home"]
    result = ScaleVault(out, planned, [])
    candidates = [n.index for n in planned if n.kind != "moc"]
    picked = set(rng.sample(candidates, min(queries, len(candidates))))
    for note in planned:
        note.links = _links(note, planned, by_topic, popular, people, projects, rng)
        text, query, words = _body(note, planned, zipf, mention_pool, rng, tags)
        path = out / note.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
        result.words += words
        result.wikilinks += len(note.links)
        if note.index in picked and query:
            result.queries.append((query, note.index))
    return result
