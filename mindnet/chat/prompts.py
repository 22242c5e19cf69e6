"""Prompt templates: one Markdown file per prompt under the prompts directory (`prompts/<name>.md`).

Files use LlamaIndex `PromptTemplate` syntax: `{placeholder}` is filled at format time. LlamaIndex's
formatter leaves unknown `{...}` untouched and has no brace escaping, so templates avoid literal braces.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from llama_index.core.prompts import PromptTemplate

from mindnet.errors import ConfigError

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def available_prompts(prompts_dir: Path) -> list[str]:
    """Names (file stems) of the prompt templates in `prompts_dir`, sorted."""
    if not prompts_dir.is_dir():
        return []
    return sorted(p.stem for p in prompts_dir.glob("*.md") if p.is_file())


def load_prompt(name: str, prompts_dir: Path) -> PromptTemplate:
    """Read `prompts_dir/<name>.md` as a template; a missing file is a ConfigError listing the names."""
    # a name is a bare file stem: this keeps decision_engine.yaml from pointing outside prompts_dir
    if not _NAME.match(name):
        raise ConfigError(
            f"prompt name {name!r} is invalid: use the file name without '.md' "
            "(letters, digits, '_' or '-'); "
            f"available in {prompts_dir}: {', '.join(available_prompts(prompts_dir)) or '(none)'}")
    path = prompts_dir / f"{name}.md"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        names = available_prompts(prompts_dir)
        raise ConfigError(
            f"{path}: prompt template '{name}' not found; available: {', '.join(names) or '(none)'}; "
            f"create {name}.md there or fix the prompt name in config/decision_engine.yaml "
            f"(or set MINDNET_PROMPTS_DIR)") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: prompt template is not valid UTF-8 ({exc}); save it as UTF-8") from exc
    if not text.strip():
        raise ConfigError(f"{path}: prompt template '{name}' is empty; write the template text into it")
    logger.debug("loaded prompt %s from %s", name, path)
    return PromptTemplate(text.strip("\n") + "\n", metadata={"name": name, "path": str(path)})
