"""Shipped defaults inside the package, their lookup order, `mindnet init` and `mindnet --version`."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from mindnet.cli import main
from mindnet.errors import ConfigError
from mindnet.scaffold import env_template, init_project
from mindnet.settings import (
    DEFAULT_CONFIG_DIR,
    DEFAULT_PROMPTS_DIR,
    PACKAGE_ROOT,
    REPO_ROOT,
    Settings,
)

RETRIEVER_EDGE_03 = "  edge_weight: 0.3\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder and no MINDNET_* variables."""
    for name in [k for k in os.environ if k.startswith("MINDNET_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _custom_retriever(folder: Path, edge_weight: float) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = (DEFAULT_CONFIG_DIR / "retriever.yaml").read_text(encoding="utf-8")
    assert RETRIEVER_EDGE_03 in text
    path = folder / "retriever.yaml"
    path.write_text(text.replace(RETRIEVER_EDGE_03, f"  edge_weight: {edge_weight}\n"), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- one source of truth


@pytest.mark.parametrize(("link", "target"), [("config", DEFAULT_CONFIG_DIR), ("prompts", DEFAULT_PROMPTS_DIR)])
def test_top_level_folders_are_the_packaged_files(link: str, target: Path) -> None:
    assert (REPO_ROOT / link).is_symlink() and (REPO_ROOT / link).resolve() == target.resolve()


def test_packaged_defaults_are_complete() -> None:
    assert sorted(p.name for p in DEFAULT_CONFIG_DIR.glob("*.yaml")) == [
        "analysis.yaml", "decision_engine.yaml", "retriever.yaml", "types.yaml"]
    assert {"system", "fact", "router", "condense", "interview"} <= {p.stem for p in DEFAULT_PROMPTS_DIR.glob("*.md")}


def test_wheel_ships_config_prompts_sample_vault_and_ui_assets(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(REPO_ROOT)], check=True, capture_output=True, cwd=tmp_path)
    wheel = next(tmp_path.glob("mindnet-*.whl"))
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = {f"mindnet/{p.relative_to(PACKAGE_ROOT).as_posix()}" for folder in ("defaults", "sample_vault")
              for p in (PACKAGE_ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    wanted |= {"mindnet/ui/chainlit.md", "mindnet/ui/elements/DraftEditor.jsx", "mindnet/ui/public/logo_dark.svg",
               "mindnet/ui/elements/SourcePanel.jsx", "mindnet/ui/public/mindnet.js", "mindnet/ui/public/mindnet.css",
               "mindnet/ui/public/icon.svg", "mindnet/ui/public/mindnet-a11y.js", "mindnet/ui/public/mindnet-a11y.css"}
    assert wanted - shipped == set()
    metadata = zipfile.ZipFile(wheel).read(f"mindnet-{version('mindnet')}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata and "Classifier: Programming Language :: Python :: 3.11" in metadata


# ------------------------------------------------------------------------------------------- lookup order


def test_without_local_files_the_packaged_defaults_are_used(workdir: Path) -> None:
    s = Settings.from_env()
    assert (s.types_path, s.retriever_path, s.decision_path, s.prompts_dir) == (
        DEFAULT_CONFIG_DIR / "types.yaml", DEFAULT_CONFIG_DIR / "retriever.yaml",
        DEFAULT_CONFIG_DIR / "decision_engine.yaml", DEFAULT_PROMPTS_DIR)
    assert s.retriever.scoring.edge_weight == 0.3 and "concept" in s.types.types


def test_local_config_is_read_file_by_file(workdir: Path) -> None:
    _custom_retriever(workdir / "config", 0.9)
    s = Settings.from_env()
    assert s.retriever_path == workdir / "config" / "retriever.yaml"
    assert s.retriever.scoring.edge_weight == 0.9
    assert s.types_path == DEFAULT_CONFIG_DIR / "types.yaml"   # not customised: the shipped one


def test_config_dir_variable_beats_the_working_folder(workdir: Path) -> None:
    _custom_retriever(workdir / "config", 0.9)
    _custom_retriever(workdir / "elsewhere", 0.8)
    s = Settings.from_env(env={"MINDNET_CONFIG_DIR": str(workdir / "elsewhere")})
    assert s.retriever.scoring.edge_weight == 0.8


def test_file_variable_beats_the_config_dir(workdir: Path) -> None:
    _custom_retriever(workdir / "config", 0.9)
    one = _custom_retriever(workdir / "single", 0.1)
    s = Settings.from_env(env={"MINDNET_RETRIEVER_CONFIG": str(one), "MINDNET_CONFIG_DIR": str(workdir / "config")})
    assert s.retriever.scoring.edge_weight == 0.1


def test_config_dir_variable_naming_no_folder_is_an_error(workdir: Path) -> None:
    with pytest.raises(ConfigError, match=r"MINDNET_CONFIG_DIR: .*nowhere is not a folder"):
        Settings.from_env(env={"MINDNET_CONFIG_DIR": str(workdir / "nowhere")})


def test_working_folder_is_fixed_when_settings_are_made(workdir: Path, tmp_path_factory) -> None:
    _custom_retriever(workdir / "config", 0.9)
    s = Settings.from_env()
    os.chdir(tmp_path_factory.mktemp("other"))
    assert s.retriever.scoring.edge_weight == 0.9


def test_local_prompts_replace_the_shipped_set(workdir: Path) -> None:
    (workdir / "prompts").mkdir()
    assert Settings.from_env().prompts_dir == DEFAULT_PROMPTS_DIR   # an empty ./prompts does not count
    (workdir / "prompts" / "fact.md").write_text("{context_str} {query_str}", encoding="utf-8")
    assert Settings.from_env().prompts_dir == workdir / "prompts"
    assert Settings.from_env(env={"MINDNET_PROMPTS_DIR": str(DEFAULT_PROMPTS_DIR)}).prompts_dir == DEFAULT_PROMPTS_DIR


def test_dry_run_works_from_a_folder_without_config(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dry-run"]) == 0
    assert '"notes"' in capsys.readouterr().out


# ------------------------------------------------------------------------------------------- mindnet init


def _shipped_relative() -> list[str]:
    return sorted([f"config/{p.name}" for p in DEFAULT_CONFIG_DIR.glob("*.yaml")]
                  + [f"prompts/{p.name}" for p in DEFAULT_PROMPTS_DIR.glob("*.md")] + [".env"])


def test_init_writes_config_prompts_and_env(tmp_path: Path) -> None:
    report = init_project(tmp_path / "mine")
    assert sorted(p.relative_to(tmp_path / "mine").as_posix() for p in report.written) == _shipped_relative()
    assert (report.kept, report.overwritten) == ([], [])
    assert (tmp_path / "mine/config/types.yaml").read_bytes() == (DEFAULT_CONFIG_DIR / "types.yaml").read_bytes()


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    init_project(tmp_path)
    edited = tmp_path / "config" / "retriever.yaml"
    edited.write_text("mine", encoding="utf-8")
    (tmp_path / ".env").write_text("MINDNET_VAULT_ROOT=/my/vault\n", encoding="utf-8")
    report = init_project(tmp_path)
    assert (report.written, report.overwritten, len(report.kept)) == ([], [], len(_shipped_relative()))
    assert edited.read_text(encoding="utf-8") == "mine"
    assert (tmp_path / ".env").read_text(encoding="utf-8") == "MINDNET_VAULT_ROOT=/my/vault\n"


def test_init_fills_in_missing_files_only(tmp_path: Path) -> None:
    init_project(tmp_path)
    (tmp_path / "prompts" / "fact.md").unlink()
    (tmp_path / "config" / "types.yaml").write_text("mine", encoding="utf-8")
    report = init_project(tmp_path)
    assert report.written == [tmp_path / "prompts" / "fact.md"]
    assert (tmp_path / "config" / "types.yaml").read_text(encoding="utf-8") == "mine"


def test_init_force_restores_the_shipped_files(tmp_path: Path) -> None:
    init_project(tmp_path)
    (tmp_path / "config" / "retriever.yaml").write_text("mine", encoding="utf-8")
    report = init_project(tmp_path, force=True)
    assert len(report.overwritten) == len(_shipped_relative()) and report.written == []
    assert (tmp_path / "config/retriever.yaml").read_bytes() == (DEFAULT_CONFIG_DIR / "retriever.yaml").read_bytes()


def test_init_force_in_the_checkout_leaves_the_linked_files_alone(tmp_path: Path) -> None:
    before = (DEFAULT_CONFIG_DIR / "types.yaml").read_bytes()
    (tmp_path / "config").symlink_to(DEFAULT_CONFIG_DIR)
    report = init_project(tmp_path, force=True)
    assert tmp_path / "config" / "types.yaml" in report.kept
    assert (DEFAULT_CONFIG_DIR / "types.yaml").read_bytes() == before


def test_init_target_that_is_a_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert main(["init", str(tmp_path / "f")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_init_cli_reports_kept_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(["init", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "wrote" not in out and "existing files kept; `mindnet init --force` overwrites them" in out


def test_env_template_lists_every_setting_commented_out() -> None:
    text = env_template()
    for name in Settings.model_fields:
        assert f"# MINDNET_{name.upper()}=" in text
    assert all(line.startswith("#") for line in text.splitlines() if line.strip())


def test_initialised_folder_is_what_mindnet_reads(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINDNET_COLLECTION_PREFIX", "unset-after-the-test")   # .env writes into os.environ
    monkeypatch.delenv("MINDNET_COLLECTION_PREFIX")
    init_project(workdir)
    _custom_retriever(workdir / "config", 0.6)
    (workdir / ".env").write_text(env_template() + "MINDNET_COLLECTION_PREFIX=mine\n", encoding="utf-8")
    s = Settings.from_env()
    assert (s.retriever.scoring.edge_weight, s.prompts_dir, s.collection_prefix) == (0.6, workdir / "prompts", "mine")


# ------------------------------------------------------------------------------------------- version


def test_version_flag_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"mindnet {version('mindnet')}"


def test_chat_welcome_page_comes_from_the_package(tmp_path: Path) -> None:
    from mindnet.ui.mount import FALLBACK_WELCOME, prepare_app_root
    root = prepare_app_root(tmp_path / "chainlit")
    shipped = (PACKAGE_ROOT / "ui" / "chainlit.md").read_text(encoding="utf-8")
    assert (root / "chainlit.md").read_text(encoding="utf-8") == shipped != FALLBACK_WELCOME
