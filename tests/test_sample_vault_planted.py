"""The sample vault's planted problems are said to be planted, where a newcomer meets them: its welcome note
names each one, and so does the import report (`SAMPLE_PLANTED`). A problem added to (or removed from) the sample
vault without updating both fails here, so a planted problem is never taken for a bug of mindnet."""

from __future__ import annotations

from mindnet.indexing.pipeline import plan_vault
from mindnet.indexing.planning import LINK_RULES
from mindnet.indexing.report import ImportReport
from mindnet.service import SAMPLE_PLANTED
from mindnet.settings import SAMPLE_VAULT, shipped_types


def _first_import_problems() -> tuple[set[str], set[str]]:
    report = ImportReport(vault=str(SAMPLE_VAULT))
    planned = plan_vault(SAMPLE_VAULT, shipped_types(), report)
    warned = {i.path for i in report.issues if i.level in ("warning", "error")}
    unresolved = {e.target_text or e.target_id for p in planned for e in p.edges
                  if not e.resolved and e.rule_id.startswith(LINK_RULES)}     # as the import report counts them
    return warned, unresolved


def test_each_problem_of_the_first_import_is_named_as_planted() -> None:
    warned, unresolved = _first_import_problems()
    assert warned and unresolved                   # the sample vault does have planted problems
    welcome = (SAMPLE_VAULT / "Willkommen.md").read_text(encoding="utf-8")
    planted = welcome[welcome.index("## Absichtlich eingebaute Fehler"):]
    for path in warned:
        assert f"`{path}`" in planted, f"{path} has a problem the welcome note does not call planted"
        assert path in SAMPLE_PLANTED, f"{path} has a problem the import report does not call planted"
    for target in unresolved:
        assert f"`{target}`" in planted, f"the unresolved link [[{target}]] is not called planted"
        assert target in SAMPLE_PLANTED
