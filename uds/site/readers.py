"""Readers: find the results in the paths given to `uds report` and load them into `Results`.

A folder is recognised by the files the commands write (docs/design.md, "Files the commands write"):
`summary.json` (+ `examples.jsonl`, `layers.csv`) of `uds score`, `metrics.json` of `uds metrics`,
`meta_eval.json` (+ `results.json`, plots) of `uds meta-eval`, `summary.json` of `uds probe` /
`uds audit`, leaderboard files (`results.json`-style lists, the published `{"models": [...]}`
layout, `uds leaderboard --format csv`), zoo build manifests (`build.json`: the training
columns) and curve files of training callbacks (`*.jsonl` opening with a curve header,
uds_core.curves). JSON files are also recognised by their content whatever their name (a metrics document
saved as `npo.json`). Sub-folders are searched too. Whatever is not read, or read only in part (an
unreadable folder or file, a broken examples.jsonl), is recorded in `Results.skipped` with the path
and the reason; nothing stops the report.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable

from uds_core.curves import is_header, read_curve
from uds_core.errors import UdsInputError
from uds_leaderboard.inputs import is_ou_summary, published_record, summary_values
from uds.site.model import AuditRun, MetaEval, MetricsRun, ProbeRun, Results, RowsFile, ScoreRun

MAX_DEPTH = 6
# Files that belong to an output the reader already took (plots, markdown renderings, raw rows):
# passed over silently rather than reported as skipped.
COMPANIONS = {"layers.png", "summary.md", "summary_no_filters.md", "leaderboard.md", "rows.jsonl", "heatmap.png",
              "grid.csv", "traces.jsonl", "facts.jsonl", "attribution.png", "published_comparison.csv",
              "pn_histograms.png", "pn_variant_histograms.png", "quantization_scatter.png", "relearning_scatter.png",
              "leaderboard_mem_privacy.png", "zoo.json", "quality.json",
              "overhead.json", "curves.png"}   # beside curve files: benchmarks/bench_curve.py, `uds curve`
META_IMAGES = ("pn_histograms.png", "quantization_scatter.png", "relearning_scatter.png", "leaderboard_mem_privacy.png")


def read_json(path: Path) -> Any:
    """Parsed JSON, or UdsInputError naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UdsInputError(f"{path}: not readable JSON ({exc})") from None


def read_jsonl(path: Path) -> list[dict]:
    """One object per non-empty line."""
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UdsInputError(f"{path}: not readable ({exc})") from None
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise UdsInputError(f"{path}:{n}: not a JSON line ({exc})") from None
    return out


def summary_kind(doc: Any) -> str | None:
    """Which command wrote this summary.json: 'score', 'probe', 'audit' or None."""
    if not isinstance(doc, dict):
        return None
    if "uds" in doc and ("unlearned" in doc or "n_examples" in doc):
        return "score"
    if isinstance(doc.get("models"), dict) and isinstance(doc.get("settings"), dict):
        return "probe"
    if isinstance(doc.get("variants"), dict) and "cells" in doc:
        return "audit"
    return None


def is_rows(doc: Any) -> bool:
    """A results.json-style list of per-model records."""
    return isinstance(doc, list) and bool(doc) and all(isinstance(r, dict) and "model" in r for r in doc)


def is_annotated(doc: Any) -> bool:
    """An annotated QA data file (docs/design.md): a list of items with question, answer and entity."""
    return isinstance(doc, list) and bool(doc) and all(isinstance(r, dict) and {"idx", "question", "answer"} <= set(r)
                                                       for r in doc[:50])


def is_build_manifest(doc: Any) -> bool:
    """A zoo build manifest (`build.json`): {"preset", "models": [{"name", "kind", "train", ...}]}."""
    return (isinstance(doc, dict) and isinstance(doc.get("models"), list) and bool(doc["models"])
            and all(isinstance(r, dict) and "name" in r and "kind" in r and "model" not in r for r in doc["models"]))


def is_metrics_doc(doc: Any) -> bool:
    """A `uds metrics` document under any file name: {"model", "metrics": {KEY: value}}."""
    return isinstance(doc, dict) and isinstance(doc.get("metrics"), dict) and "faithfulness" not in doc


def rows_file(doc: Any, path: Path) -> RowsFile | None:
    """The per-model records of a JSON document: a list of records with `model`, the published
    `{"models": [...], "full_utility": {...}}` layout (its 1 - x and s_* fields mapped back to the
    raw keys, as `uds leaderboard` does), or a build manifest."""
    if is_rows(doc):
        return RowsFile(path, [dict(r) for r in doc])
    if is_build_manifest(doc):
        return RowsFile(path, [dict(r) for r in doc["models"]], kind="build")
    if isinstance(doc, dict) and isinstance(doc.get("models"), list):
        rows = [r for r in doc["models"] if isinstance(r, dict)]
        if rows and all(r.get("model") is not None for r in rows):
            full = {str(k): float(v) for k, v in (doc.get("full_utility") or {}).items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)}
            return RowsFile(path, [published_record(r) for r in rows], kind="published", full_utility=full)
    return None


def csv_rows(path: Path) -> list[dict] | None:
    """Rows of a leaderboard CSV (a `model` column); numbers parsed, empty cells None."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            table = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if not table or "model" not in table[0]:
        return None
    return [{k: _number(v) if k not in ("model", "method") else v for k, v in r.items() if k} for r in table]


def _number(text: str | None) -> Any:
    if text is None or text.strip() == "":
        return None
    try:
        return float(text) if any(c in text for c in ".eE") or text.strip().lower() in ("nan", "inf", "-inf") \
            else int(text)
    except ValueError:
        return text


def entity_range(reference: str, entity: str) -> tuple[int, int] | None:
    """[c0, c1) of the entity in the reference: exact, then stripped, then with a leading space
    (the same search order as the scorer's span annotation, spec §2.3)."""
    for cand in (entity, entity.strip(), " " + entity.strip()):
        c0 = reference.find(cand) if cand else -1
        if c0 >= 0:
            return c0, c0 + len(cand)
    return None


def split_prompt(prompt: str) -> tuple[str, str]:
    """(question, answer prefix) of a raw `Question: q\\nAnswer: prefix` prompt; ('', prompt) otherwise."""
    head, sep, tail = prompt.partition("\nAnswer:")
    if not sep:
        return "", prompt
    return head[len("Question: "):] if head.startswith("Question: ") else head, tail


def annotate(record: dict, data: dict[str, dict] | None) -> dict:
    """The record with `question`, `answer` (prefix + continuation, as scored) and `entity_span`
    ([c0, c1) in `answer`, or None when the entity is unknown or not found) added."""
    prompt, reference = record.get("prompt") or "", record.get("reference") or ""
    question, prefix = split_prompt(prompt)
    item = (data or {}).get(str(record.get("idx")))
    if item and isinstance(item.get("question"), str):
        question = item["question"]
    answer = prefix + reference
    span = None
    entity = item.get("entity") if item else None
    if isinstance(entity, str) and entity:
        hit = entity_range(reference, entity)
        if hit:
            span = [hit[0] + len(prefix), hit[1] + len(prefix)]
    cut = len(answer) - len(answer.lstrip())          # the answer shown without its leading space
    if span:
        span = [span[0] - cut, span[1] - cut] if span[0] >= cut else [0, span[1] - cut]
    return {**record, "question": question, "answer": answer[cut:], "entity": entity, "entity_span": span}


class DataFiles:
    """Annotated data files (by path), read once; idx (as text) -> record."""

    def __init__(self) -> None:
        self._cache: dict[str, dict[str, dict] | None] = {}

    def read_paths(self) -> list[str]:
        """Paths that were read successfully."""
        return [p for p, v in self._cache.items() if v is not None]

    def get(self, path: str | None) -> dict[str, dict] | None:
        if not path:
            return None
        if path not in self._cache:
            try:
                doc = json.loads(Path(path).read_text(encoding="utf-8"))
                self._cache[path] = {str(r["idx"]): r for r in doc if isinstance(r, dict) and "idx" in r} \
                    if isinstance(doc, list) else None
            except (OSError, UnicodeDecodeError, ValueError):
                self._cache[path] = None
        return self._cache[path]


def examples_from_csv(path: Path) -> list[dict]:
    """Per-example records rebuilt from layers.csv (used only when examples.jsonl is absent)."""
    by_idx: dict[str, dict] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            rec = by_idx.setdefault(r["idx"], {"idx": _number(r["idx"]), "s1_delta": [], "s2_delta": [],
                                               "ke_layers": [], "uds": None, "skipped_reason": None})
            layer = int(r["layer"])
            rec["s1_delta"].append(_number(r.get("s1_delta")))
            rec["s2_delta"].append(_number(r.get("s2_delta")))
            if r.get("ke") == "1":
                rec["ke_layers"].append(layer)
    return list(by_idx.values())


class Reader:
    """Walks the given paths and fills one `Results`."""

    def __init__(self) -> None:
        self.results = Results()
        self.data = DataFiles()
        self._seen: set[Path] = set()
        self._tables: set[Path] = set()      # row files read (a results.json beside two meta-evals once)
        self.data_files: list[Path] = []     # annotated QA files met on the walk
        self.unread_data: dict[str, list[Path]] = {}   # data file a run names but cannot be read -> its runs

    def skip(self, path: Path, reason: str) -> None:
        self.results.skipped.append((path, reason))

    def read(self, paths: Iterable[str | Path]) -> Results:
        for raw in paths:
            path = Path(raw).expanduser()
            if not path.exists():
                raise UdsInputError(f"--results {raw}: no such file or folder")
            self.results.roots.append(path)
            if path.is_dir():
                self.folder(path, 0)
            else:
                self.file(path)
        for data, runs in self.unread_data.items():
            named = ", ".join(map(str, runs[:3])) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
            self.skip(Path(data), f"data file not readable: no entity span highlighted in the {len(runs)} score "
                                  f"run(s) that name it ({named})")
        used = {Path(p).resolve() for p in self.data.read_paths()}
        for p in self.data_files:
            if p.resolve() not in used:
                self.skip(p, "annotated QA data that no score run names (it is read through a run's summary.json)")
        return self.results

    def add_rows(self, table: RowsFile) -> None:
        """Keep a row file once, however many times the walk meets it."""
        key = table.source.resolve()
        if key not in self._tables:
            self._tables.add(key)
            self.results.tables.append(table)

    def folder(self, folder: Path, depth: int) -> None:
        if folder.resolve() in self._seen:
            return
        self._seen.add(folder.resolve())
        try:
            entries = sorted(folder.iterdir())
            names = {p.name for p in entries if p.is_file()}
        except OSError as exc:
            self.skip(folder, f"unreadable folder ({exc.strerror or exc}): its results are not in the report")
            return
        if self.campaign(folder, names):
            return
        taken: set[str] = set()
        found_before = self._count()
        if "summary.json" in names:
            taken |= self.summary(folder / "summary.json", names)
        if "metrics.json" in names:
            taken.add("metrics.json")
            self.metrics_file(folder / "metrics.json")
        if "meta_eval.json" in names:
            taken |= {"meta_eval.json", "results.json"}
            self.meta_file(folder / "meta_eval.json")
        if "TOFU_SUMMARY.json" in names:
            taken.add("TOFU_EVAL.json")        # its per-item values; the summary holds the aggregates
        for name in sorted(names - taken - COMPANIONS):
            if name.endswith((".json", ".csv", ".jsonl")):
                self.file(folder / name)
            elif not name.startswith("."):
                self.skip(folder / name, "not a result file uds report reads")
        if depth < MAX_DEPTH:
            for sub in (p for p in entries if p.is_dir() and not p.name.startswith((".", "__"))):
                self.folder(sub, depth + 1)
        if self._count() == found_before and depth == 0:
            self.skip(folder, "no result files found in it or its sub-folders")

    def campaign(self, folder: Path, names: set[str]) -> bool:
        """A `uds campaign` folder (protocol.json, measurements/): said once, not walked file by file."""
        if "protocol.json" not in names or not (folder / "measurements").is_dir():
            return False
        n = len(list((folder / "measurements").glob("*/*.json")))
        self.skip(folder, f"a meta-evaluation campaign ({n} measurement files; `uds campaign status --dir {folder}` "
                          "counts them): uds report reads the meta_eval.json assembled from it, not the campaign")
        return True

    def _count(self) -> int:
        r = self.results
        return (len(r.scores) + len(r.metrics) + len(r.tables) + len(r.meta) + len(r.probes) + len(r.audits)
                + len(r.curves))

    def file(self, path: Path) -> None:
        name = path.name
        if name == "summary.json":
            self.summary(path, {p.name for p in path.parent.iterdir() if p.is_file()})
        elif name == "metrics.json":
            self.metrics_file(path)
        elif name == "meta_eval.json":
            self.meta_file(path)
        elif name == "examples.jsonl":
            if (path.parent / "summary.json").is_file():
                self.summary(path.parent / "summary.json", {"summary.json", "examples.jsonl"})
            else:
                self.skip(path, "examples.jsonl without the summary.json of its `uds score` folder")
        elif name.endswith(".json"):
            try:
                doc = read_json(path)
            except UdsInputError as exc:
                self.skip(path, str(exc).split(": ", 1)[-1])
                return
            table = rows_file(doc, path)
            if table is not None:
                self.add_rows(table)
            elif isinstance(doc, dict) and "faithfulness" in doc:
                self.meta_file(path)
            elif summary_kind(doc):
                self.summary(path, set())
            elif is_metrics_doc(doc):
                self.metrics_file(path)
            elif is_ou_summary(doc):
                self.results.metrics.append(MetricsRun(ou_model_name(path), path, summary_values(doc), kind="ou"))
            elif is_annotated(doc):
                self.data_files.append(path)
            else:
                self.skip(path, "JSON of a kind uds report does not read")
        elif name.endswith(".jsonl"):
            self.curve_file(path)
        elif name.endswith(".csv"):
            rows = csv_rows(path)
            if rows is None:
                self.skip(path, "CSV without a `model` column (not a leaderboard)")
            else:
                self.add_rows(RowsFile(path, rows))
        else:
            self.skip(path, "not a result file uds report reads")

    def summary(self, path: Path, names: set[str]) -> set[str]:
        """Read one summary.json by kind; returns the file names it consumed."""
        try:
            doc = read_json(path)
        except UdsInputError as exc:
            self.skip(path, str(exc).split(": ", 1)[-1])
            return {"summary.json"}
        kind = summary_kind(doc)
        folder = path.parent
        if kind == "score":
            return self.score(path, doc, names)
        if kind == "probe":
            self.results.probes.append(ProbeRun(path, doc, _file(folder / "heatmap.png")))
            return {"summary.json"}
        if kind == "audit":
            self.results.audits.append(AuditRun(path, doc, _file(folder / "attribution.png")))
            return {"summary.json"}
        self.skip(path, "summary.json of another command (not score, probe or audit)")
        return {"summary.json"}

    def score(self, path: Path, summary: dict, names: set[str]) -> set[str]:
        folder = path.parent
        examples, used = self.score_examples(path, names)
        data = self.data.get(summary.get("data"))
        if examples and data is None and any("prompt" in e for e in examples):
            self.unread_data.setdefault(str(summary.get("data")), []).append(folder)
        annotated = [annotate(e, data) for e in examples if isinstance(e, dict)]
        name = str(summary.get("unlearned") or folder.name)
        source = folder if path.name == "summary.json" else path     # several summaries in one folder: the file
        self.results.scores.append(ScoreRun(name, source, summary, annotated))
        return used

    def score_examples(self, summary: Path, names: set[str]) -> tuple[list[dict], set[str]]:
        """The per-example records of a score folder (examples.jsonl, else layers.csv) and the file
        names consumed; a file that cannot be read is skipped with its reason (summary only)."""
        folder = summary.parent
        used = {"summary.json"} | ({"examples.jsonl", "layers.csv"} & names)
        if "examples.jsonl" in names:
            try:
                return read_jsonl(folder / "examples.jsonl"), used
            except UdsInputError as exc:
                why = str(exc).split(": ", 1)[-1]
                self.skip(folder / "examples.jsonl", f"{why}: the model page shows the summary only")
                return [], used
        if "layers.csv" in names:
            self.skip(folder / "examples.jsonl", "absent: per-layer values read from layers.csv (no text, no UDS_i)")
            try:
                return examples_from_csv(folder / "layers.csv"), used
            except (OSError, UnicodeDecodeError, KeyError, ValueError, csv.Error) as exc:
                self.skip(folder / "layers.csv", f"not readable ({exc}): the model page shows the summary only")
                return [], used
        self.skip(summary, "a score summary without examples.jsonl or layers.csv beside it: the model page "
                           "shows UDS and its interval, no per-layer or per-example data")
        return [], used

    def curve_file(self, path: Path) -> None:
        """A curve of a training callback; any other JSON-lines file is passed over, said."""
        try:
            with open(path, encoding="utf-8") as f:
                first = f.readline()
            header = json.loads(first) if first.strip() else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            header = None
        if not is_header(header):
            self.skip(path, "JSON lines that are not a curve file (no curve header on the first line)")
            return
        try:
            self.results.curves.append(read_curve(path))
        except (OSError, ValueError) as exc:
            self.skip(path, str(exc))

    def metrics_file(self, path: Path) -> None:
        try:
            doc = read_json(path)
        except UdsInputError as exc:
            self.skip(path, str(exc).split(": ", 1)[-1])
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
            self.skip(path, "metrics.json without a `metrics` object")
            return
        name = str(doc.get("model") or path.parent.name)
        self.results.metrics.append(MetricsRun(name, path, dict(doc["metrics"])))

    def meta_file(self, path: Path) -> None:
        try:
            doc = read_json(path)
        except UdsInputError as exc:
            self.skip(path, str(exc).split(": ", 1)[-1])
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("faithfulness"), dict):
            self.skip(path, "meta_eval.json without a `faithfulness` object")
            return
        images = {n: path.parent / n for n in META_IMAGES if (path.parent / n).is_file()}
        meta = MetaEval(path, doc, images)
        self.results.meta.append(meta)
        rows_path = path.parent / "results.json"
        if rows_path.is_file():
            try:
                table = rows_file(read_json(rows_path), rows_path)
            except UdsInputError as exc:
                self.skip(rows_path, str(exc).split(": ", 1)[-1])
                return
            if table is None or table.kind != "leaderboard":
                self.skip(rows_path, "results.json beside meta_eval.json is not a list of per-model rows")
            else:
                meta.rows = table.rows
                self.add_rows(table)


def ou_model_name(path: Path) -> str:
    """The model of an OU summary: its folder's name for TOFU_SUMMARY.json (OU's saves/eval/<model>/),
    else the file name before `_TOFU_SUMMARY` (a copied `<model>_TOFU_SUMMARY.json`)."""
    stem = path.stem
    if stem == "TOFU_SUMMARY":
        return path.parent.name
    return stem[:-len("_TOFU_SUMMARY")] if stem.endswith("_TOFU_SUMMARY") else stem


def _file(path: Path) -> Path | None:
    return path if path.is_file() else None


def read_results(paths: Iterable[str | Path]) -> Results:
    """Everything `uds report` can show from these files and folders (UdsInputError: a missing path)."""
    return Reader().read(paths)
