"""The first run as a user sees it: `mindnet serve` on a vault never imported, the chat open in Chromium.

    python -m benchmarks.bench_firstrun [--generated 141] [--latency 3.0] [--json]

Copies the sample vault plus `--generated` generated notes (173 notes in all by default) to a fresh folder
with a fresh index and embedding cache, starts `mindnet serve` (the test suite's fake Ollama answers every
call after `--latency` seconds, and its model always says "Dazu steht nichts in deinen Notizen.", as a model
that found nothing fitting would), opens the chat in headless Chromium as soon as the server answers and prints

    serve start -> status strip shown
    serve start -> first answer with sources
    serve start -> import done (strip gone)

and how many answers the chat gave during the import (a question is asked again until an answer has sources,
then once more while the import still runs) and how many of them claimed "nothing in your notes" (it must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mindnet.settings import REPO_ROOT

NOTHING = "Dazu steht nichts in deinen Notizen"
QUESTION = "Warum habe ich Qdrant statt Chroma gewählt?"
CHROMIUM = "/usr/bin/chromium"


# when the strip first shows, on the page's clock (it may come and go between two looks of the benchmark)
SEEN_STRIP = """new MutationObserver(function () {
  var s = document.getElementById("mindnet-import-strip");
  if (!window.__mindnetStrip && s && !s.hidden && s.textContent)
    window.__mindnetStrip = {at: Date.now(), text: s.textContent};
}).observe(document, {childList: true, subtree: true, attributes: true, characterData: true});"""


def _reply(messages: list[dict[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages)
    return "DECISION" if "Du bist der Router" in text else f"{NOTHING}. Allgemein: lokal ist schneller."


def measure(*, generated: int, latency: float, timeout: float) -> dict[str, Any]:
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from helpers_ui import FreshVaultServer, generated_notes  # the test suite's server and fake Ollama
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {"latency_s": latency}
    with tempfile.TemporaryDirectory(prefix="mindnet-bench-firstrun-") as tmp:
        srv = FreshVaultServer(Path(tmp), latency=latency)
        srv.ollama.chat_fn = _reply
        extra = generated_notes(generated)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            try:
                srv.start(timeout=timeout, extra_notes=extra)
                t0 = srv.started_at
                out["notes"] = sum(1 for _ in srv.vault.rglob("*.md"))
                out["serve_to_health_s"] = round(time.monotonic() - t0, 2)
                wall0 = time.time() - (time.monotonic() - t0)     # serve start on the page's clock (Date.now)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.set_default_timeout(timeout * 1000)
                page.add_init_script(SEEN_STRIP)
                page.goto(f"{srv.url}/", wait_until="domcontentloaded")
                page.locator("#chat-settings-open-modal").wait_for()
                seen = page.evaluate("window.__mindnetStrip || null")
                if seen is None and srv.health()["import"]["running"]:
                    page.wait_for_function("window.__mindnetStrip")
                    seen = page.evaluate("window.__mindnetStrip")
                out["serve_to_strip_s"] = round(seen["at"] / 1000 - wall0, 2) if seen else None
                out["strip_first"] = seen["text"] if seen else "(the import had ended before the page loaded)"
                answers: list[dict[str, Any]] = []   # until one has sources, then once more if the import runs
                while len(answers) < 30:
                    answers.append(_ask(page, QUESTION, t0, importing=srv.health()["import"]["running"]))
                    with_sources = sum(a["sources"] for a in answers)
                    if with_sources >= 2 or (with_sources and not srv.health()["import"]["running"]):
                        break
                first = next((a for a in answers if a["sources"]), None)
                out["serve_to_first_answer_with_sources_s"] = first["at_s"] if first else None
                page.wait_for_function("!document.getElementById('mindnet-import-strip') || "
                                       "document.getElementById('mindnet-import-strip').hidden")
                out["serve_to_strip_gone_s"] = round(time.monotonic() - t0, 2)
                during = [a for a in answers if a["importing"]]
                out["answers"] = answers
                out["answers_during_import"] = len(during)
                out["answers_during_import_claiming_nothing"] = sum(a["claims_nothing"] for a in during)
            finally:
                browser.close()
                srv.stop()
    return out


def _ask(page: Any, text: str, t0: float, *, importing: bool) -> dict[str, Any]:
    answers = page.locator("[data-step-type=assistant_message]")
    before = answers.count()
    composer = page.locator("#chat-input")
    composer.click()
    composer.fill(text)
    page.locator("#chat-submit").click()
    answers.nth(before).wait_for()
    page.wait_for_function("!document.getElementById('stop-button')")
    page.wait_for_function("(n) => { const a = document.querySelectorAll('[data-step-type=assistant_message]'); "
                           "return a.length > n && !a[a.length - 1].textContent.includes('writing the answer'); }",
                           arg=before)
    at = round(time.monotonic() - t0, 2)
    answer = answers.last.inner_text()
    searched = next((line.strip("⚠ ").strip() for line in answer.splitlines() if "Searched" in line), None)
    return {"at_s": at, "importing": importing or searched is not None, "sources": "Sources" in answer,
            "claims_nothing": NOTHING in answer, "searched": searched}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_firstrun", description=__doc__.split("\n")[0])
    ap.add_argument("--generated", type=int, default=141, help="generated notes added to the sample vault")
    ap.add_argument("--latency", type=float, default=3.0, help="seconds the fake Ollama takes per call")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 2
    out = measure(generated=args.generated, latency=args.latency, timeout=args.timeout)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(f"notes: {out['notes']}, fake Ollama {args.latency} s per call, load average {out['load_average']}")
    print(f"serve start -> status strip shown: {out['serve_to_strip_s']} s  ({out['strip_first']!r})")
    print(f"serve start -> /health answers: {out['serve_to_health_s']} s")
    print(f"serve start -> first answer with sources: {out['serve_to_first_answer_with_sources_s']} s")
    print(f"serve start -> import done (strip gone): {out['serve_to_strip_gone_s']} s")
    print(f"answers during the import: {out['answers_during_import']}, claiming 'nothing in your notes': "
          f"{out['answers_during_import_claiming_nothing']}")
    for a in out["answers"]:
        print(f"  at {a['at_s']} s: sources={a['sources']} importing={a['importing']} searched={a['searched']!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
