"""What one audit run reads: per database variant, its database file and prompt files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from checkpoints.lmlm.db import FactDB
from checkpoints.lmlm.prompts import PromptRow, alias_groups, read_prompts
from checkpoints.lmlm.world_db import VARIANTS, ensure_world_audit
from checkpoints.specs import parse_tiny_zoo
from uds_core.errors import UdsInputError

DB_SUFFIXES = (".json", ".sqlite", ".db")


@dataclass
class AuditSet:
    variant: str
    db_path: Path
    prompt_dir: Path
    prompts: dict[str, list[PromptRow]]     # style -> rows

    def open_db(self) -> FactDB:
        """The database in memory, with the alias maps the prompt rows carry added."""
        rows = [r for rs in self.prompts.values() for r in rs]
        return FactDB.open(self.db_path, alias_groups(rows))


def resolve_sets(db: str, prompts: str | None, variants: list[str] | None, styles: list[str]) -> list[AuditSet]:
    """`db`: a database file, a folder of `<variant>.json` files, or `tiny:<preset>[-seed]` (the
    tiny world's four variants). Prompts: `prompts` (a folder with `<variant>/` subfolders, a
    folder of prompt files, or one file), else `prompts/<variant>` next to the database."""
    zoo = parse_tiny_zoo(db)
    folder = ensure_world_audit(*zoo) if zoo else Path(db)
    if folder.is_dir():
        names = variants or [v for v in VARIANTS if _db_file(folder, v)]
        if not names:
            raise UdsInputError(f"{db}: no <variant>.json database in the folder")
        files = []
        for v in names:
            f = _db_file(folder, v)
            if f is None:
                raise UdsInputError(f"{db}: no database file for variant {v!r}")
            files.append(f)
    elif folder.is_file():
        files = [folder]
    else:
        raise UdsInputError(f"no database file or folder at {db!r}")
    return [_set_of(f, prompts, styles) for f in files]


def _db_file(folder: Path, variant: str) -> Path | None:
    return next((folder / f"{variant}{s}" for s in DB_SUFFIXES if (folder / f"{variant}{s}").is_file()), None)


def _set_of(db_file: Path, prompts: str | None, styles: list[str]) -> AuditSet:
    variant = db_file.stem
    base = Path(prompts) if prompts else db_file.parent / "prompts"
    pdir = base / variant if (base / variant).is_dir() else base
    return AuditSet(variant, db_file, pdir, read_prompts(pdir, styles))
