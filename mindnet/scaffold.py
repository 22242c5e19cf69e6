"""`mindnet init`: editable copies of the shipped config and prompts, and a `.env` template, in a folder.

Run from that folder, mindnet reads them before the packaged defaults (./config file by file, ./prompts as a
whole). Existing files are kept unless `force` is set: a customised config is never lost to a second init.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pydantic.fields import FieldInfo

from mindnet.errors import ConfigError
from mindnet.settings import DEFAULT_CONFIG_DIR, DEFAULT_PROMPTS_DIR, PACKAGE_ROOT, Settings

ENV_HEADER = """\
# mindnet settings for this folder (read from the working folder; real environment variables win).
# Every line is commented out: the value shown is the default. Uncomment and edit what you want to change.
# ./config and ./prompts next to this file are picked up by themselves when mindnet runs from here.
"""


@dataclass
class InitReport:
    """What `init_project` did, file by file."""

    folder: Path
    written: list[Path] = field(default_factory=list)
    overwritten: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)


def _default_text(name: str, info: FieldInfo) -> tuple[str, str]:
    """(value, note) shown for a setting in the template."""
    if name == "prompts_dir":
        return "./prompts", "the shipped prompts when ./prompts holds none"
    if name == "config_dir":
        return "./config", "files missing there come from the shipped defaults"
    default = info.get_default(call_default_factory=False)
    if isinstance(default, Path) and PACKAGE_ROOT in default.resolve().parents:
        return "", "default: the bundled sample vault"
    return ("" if default is None else str(default)), ""


def env_template() -> str:
    """A `.env` listing every MINDNET_* setting with its default, commented out (made from `Settings`)."""
    lines = [ENV_HEADER]
    for name, info in Settings.model_fields.items():
        value, note = _default_text(name, info)
        comment = "; ".join(x for x in (info.description, note) if x)
        if comment:
            lines.append(f"# {comment}")
        lines.append(f"# MINDNET_{name.upper()}={value}\n")
    return "\n".join(lines)


def _sources() -> list[tuple[Path, str]]:
    """(packaged file, path relative to the target folder) for every shipped config and prompt file."""
    files = [(p, f"config/{p.name}") for p in sorted(DEFAULT_CONFIG_DIR.glob("*.yaml"))]
    files += [(p, f"prompts/{p.name}") for p in sorted(DEFAULT_PROMPTS_DIR.glob("*.md"))]
    if not files:
        raise ConfigError(f"{PACKAGE_ROOT / 'defaults'}: the packaged defaults are missing; reinstall mindnet")
    return files


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def init_project(folder: Path, *, force: bool = False) -> InitReport:
    """Write config/*.yaml, prompts/*.md and .env into `folder` (created when missing).

    Existing files are kept (listed in `kept`) unless `force` is set; nothing else in the folder is touched.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: exists and is not a folder; choose another target for `mindnet init`")
    report = InitReport(folder=folder)
    targets: list[tuple[Path | None, Path]] = [(src, folder / rel) for src, rel in _sources()]
    targets.append((None, folder / ".env"))
    for src, dest in targets:
        exists = dest.exists()
        if exists and (not force or (src is not None and _same_file(src, dest))):
            report.kept.append(dest)   # in the repo checkout ./config links to the packaged files themselves
            continue
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            if src is None:
                dest.write_text(env_template(), encoding="utf-8")
            else:
                shutil.copyfile(src, dest)
        except OSError as exc:
            raise ConfigError(f"{dest}: cannot write ({exc.strerror or exc}); check the folder's permissions"
                              ) from exc
        (report.overwritten if exists else report.written).append(dest)
    return report
