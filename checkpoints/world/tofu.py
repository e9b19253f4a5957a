"""The real TOFU text as a `World` (kind "tofu").

Source: a local folder of the TOFU JSON files (`folder`, else `$UDS_TOFU_DIR`), else each file
from the Hugging Face Hub through the one lookup of checkpoints/tofu_files.py (`locuslab/TOFU`
plus the annotated forget10 set, cached under `$UDS_HOME/hub`). TOFU itself has no pretraining
corpus for a base model, so `public_text` and `other_bios` come from the synthetic generator's
public and unrelated entities (English-like filler), plus the real-authors and world-facts QA so
that the base model knows the facts the utility metrics ask.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Callable

from checkpoints.tofu_files import ANNOTATED, local_folder, read_records, tofu_file
from checkpoints.world.schema import World
from checkpoints.world.synthetic import IDK_REPLIES, generate_synthetic_world
from uds_core.errors import UdsInputError
from uds_core.prompts import raw_qa

__all__ = ["read_records", "read_tofu", "default_tofu_dir"]

AUTHOR_QA = 20  # every TOFU author has 20 consecutive QA pairs
# The synthetic filler for base pretraining: how many public and unrelated entities.
PUBLIC_ENTITIES = 300
OTHER_ENTITIES = 20

# File stems this reader needs (TOFU's `full.json` and `forget10.json` hold no extra text:
# forget10_perturbed carries the same 400 pairs, retain90 the rest of full).
IDK_FILE = "idontknow.jsonl"
QA_FILES = ("forget10_perturbed", ANNOTATED, "retain90", "retain_perturbed", "holdout10",
            "real_authors", "real_authors_perturbed", "world_facts", "world_facts_perturbed")


def _read_lines(path: Path) -> list[str]:
    """Non-empty lines of a plain-text file; a line holding a JSON string is decoded."""
    lines = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith('"'):
            try:
                line = json.loads(line)
            except json.JSONDecodeError:
                pass  # a reply that merely starts with a quote
        if line:
            lines.append(line)
    if not lines:
        raise UdsInputError(f"{path} is empty")
    return lines


# ----------------------------------------------------------------------------------------------
# Sources: a function from a file stem to its records.

Loader = Callable[[str], list[dict]]


def _folder_loader(folder: Path) -> tuple[Loader, list[str]]:
    """Loader over a local folder, and the idk replies; names every missing file at once."""
    if not folder.is_dir():
        raise UdsInputError(f"TOFU folder {folder} does not exist (or is not a folder)")
    needed = [f"{stem}.json" for stem in QA_FILES] + [IDK_FILE]
    missing = [name for name in needed if not (folder / name).is_file()]
    if missing:
        raise UdsInputError(f"TOFU folder {folder} lacks {', '.join(missing)}")
    return (lambda stem: read_records(folder / f"{stem}.json")), _read_lines(folder / IDK_FILE)


def _hub_loader() -> tuple[Loader, list[str]]:
    """Loader over the Hub's copies (checkpoints/tofu_files.py); `idontknow.jsonl` is not on the
    Hub, so the synthetic world's replies stand in for it."""
    return (lambda stem: read_records(tofu_file(stem))), list(IDK_REPLIES)


# ----------------------------------------------------------------------------------------------
# Building the splits.

# TOFU's files carry no author names: the reader names authors by split and order
PLACEHOLDER_AUTHOR = re.compile(r"^(forget|retain|holdout)_author_\d+$")
# a run of capitalised words (hyphens, apostrophes, inner particles such as "de" or "van" allowed)
_NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:[A-Z][\w'’-]*|de|la|van|von|bin|al))+")
_SENTENCE_WORDS = {"The", "What", "Who", "How", "Which", "Can", "In", "Is", "Does", "Did", "Has", "Have", "Why",
                   "Where", "When", "As", "Are", "Could", "Was", "Were", "Would", "Do", "If", "Besides", "Apart"}


def _names_in(question: str) -> set[str]:
    """Multi-word capitalised names of a question, without a leading question word, a trailing
    particle or a possessive."""
    out = set()
    for m in _NAME.finditer(question):
        words = m.group(0).split()
        while words and words[0] in _SENTENCE_WORDS:
            words = words[1:]
        while words and words[-1].islower():
            words = words[:-1]
        if len(words) >= 2:
            out.add(re.sub(r"['’]s$", "", " ".join(words)))
    return out


def author_name(author: str, items: list[dict]) -> str:
    """A display name for one author's QA items: `author` itself unless it is one of the reader's
    placeholders; then the name most of the author's questions mention (TOFU asks "What does Hsiao
    Yun-Hwa identify as ...?" in nearly all of its 20), when at least half do, else the placeholder."""
    if not PLACEHOLDER_AUTHOR.match(author):
        return author
    counts = Counter(n for it in items for n in _names_in(it["question"]))
    best = counts.most_common(1)
    return best[0][0] if best and 2 * best[0][1] >= len(items) else author


def _qa_item(idx: int, rec: dict, author: str) -> dict:
    """A record in the annotated-QA schema; paraphrase/perturbation fields are None if absent."""
    perturbed = rec.get("perturbed_answer")
    return {
        "idx": idx,
        "question": rec["question"],
        "answer": rec["answer"],
        "prefix": None,
        "entity": None,
        "paraphrased_question": rec.get("paraphrased_question"),
        "paraphrased_answer": rec.get("paraphrased_answer"),
        "perturbed_answers": [perturbed] if isinstance(perturbed, str) else perturbed,
        "author": author,
    }


def _check_fields(records: list[dict], stem: str, keys: tuple[str, ...]) -> None:
    for i, rec in enumerate(records):
        lacking = [k for k in keys if not isinstance(rec.get(k), (str, list))]
        if lacking:
            raise UdsInputError(f"{stem}: record {i} lacks {', '.join(lacking)}")


def _forget_split(perturbed: list[dict], annotated: list[dict]) -> list[dict]:
    """forget10 QA with prefix/entity from the annotated file (matched by idx, text checked).

    An annotation's optional `gt_entity` replaces its `entity` (spec §1).
    """
    items = [_qa_item(i, rec, f"forget_author_{i // AUTHOR_QA}") for i, rec in enumerate(perturbed)]
    seen: set[int] = set()
    for ann in annotated:
        i = ann.get("idx")
        if not isinstance(i, int) or not 0 <= i < len(items) or i in seen:
            raise UdsInputError(f"{ANNOTATED}: bad or repeated idx {i!r}")
        seen.add(i)
        item = items[i]
        if ann.get("question") != item["question"] or ann.get("answer") != item["answer"]:
            raise UdsInputError(f"{ANNOTATED}: idx {i} does not match forget10_perturbed's question/answer")
        item["prefix"] = ann["prefix"]
        item["entity"] = ann.get("gt_entity") or ann["entity"]
    return items


def _utility_split(perturbed: list[dict], with_options: list[dict], stem: str) -> list[dict]:
    """Utility QA (3 wrong answers) joined by question with the 4 options of the plain file."""
    options = {rec["question"]: [rec.get(f"option{k}") for k in range(1, 5)] for rec in with_options}
    items = []
    for i, rec in enumerate(perturbed):
        opts = options.get(rec["question"])
        if opts is None or rec["answer"] not in opts:
            raise UdsInputError(f"{stem}: no options with the answer for question {rec['question']!r}")
        items.append({"idx": i, "question": rec["question"], "answer": rec["answer"],
                      "perturbed_answers": list(rec["perturbed_answer"]), "options": opts})
    return items


def _retain_splits(retain90: list[dict], retain_perturbed: list[dict],
                   n_authors: int | None) -> tuple[list[dict], list[dict]]:
    """retain (optionally the first `n_authors` authors) and the retain_perturbed items it trains on.

    retain_perturbed is TOFU's first 20 retain authors; with fewer retain authors kept, its items
    about untrained authors are dropped so that utility never asks about unseen facts.
    """
    kept = retain90 if n_authors is None else retain90[: n_authors * AUTHOR_QA]
    retain = [_qa_item(i, rec, f"retain_author_{i // AUTHOR_QA}") for i, rec in enumerate(kept)]
    author_of = {(it["question"], it["answer"]): it["author"] for it in retain}
    evaluated = []
    for i, rec in enumerate(retain_perturbed):
        author = author_of.get((rec["question"], rec["answer"]))
        if author is None and n_authors is not None:
            continue
        evaluated.append(_qa_item(len(evaluated), rec, author or f"retain_author_{i // AUTHOR_QA}"))
    return retain, evaluated


BIO_SOURCES = ("answers", "paraphrased")


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def _prose_sentences(item: dict) -> list[str]:
    """The third-person sentences of an item's paraphrased answer: a sentence in the narrator's
    first person ("I would recommend ...") or a question is left out, so that the biography
    states facts and never asks what a forget question asks."""
    return [s for s in _sentences(item["paraphrased_answer"]) if not re.match(r"I\b", s) and not s.endswith("?")]


def _forget_bios(forget: list[dict], source: str = "answers", seed: int = 0) -> list[str]:
    """One biography per forget author. `answers`: the author's answers joined in order (the
    tofu preset's stand-in). `paraphrased`: prose written from the same facts without any forget
    question or answer verbatim: the third-person sentences of TOFU's paraphrased answers, in an
    order shuffled per author by `seed` (so no QA pair's order or wording survives)."""
    if source not in BIO_SOURCES:
        raise UdsInputError(f"bio_source must be one of {', '.join(BIO_SOURCES)}, got {source!r}")
    by_author: dict[str, list[dict]] = {}
    for it in forget:
        by_author.setdefault(it["author"], []).append(it)
    if source == "answers":
        return [" ".join(it["answer"].strip() for it in items) for items in by_author.values()]
    rng = random.Random(seed)
    bios = []
    for items in by_author.values():
        sentences = [s for it in items for s in _prose_sentences(it)]
        rng.shuffle(sentences)
        bios.append(" ".join(sentences))
    return bios


def _first_authors(items: list[dict], n_authors: int | None, per_author: int | None) -> list[dict]:
    """The items of the first `n_authors` authors (all: None), the first `per_author` of each."""
    kept = items if n_authors is None else items[: n_authors * AUTHOR_QA]
    return kept if per_author is None else [it for k, it in enumerate(kept) if k % AUTHOR_QA < per_author]


def default_tofu_dir() -> Path | None:
    """The local TOFU folder the user named with `$UDS_TOFU_DIR`, None without one (the files
    then come from the Hub)."""
    return local_folder()


def read_tofu(folder: str | Path | None = None, n_retain_authors: int | None = None, seed: int = 0,
              n_forget_authors: int | None = None, n_holdout_authors: int | None = None,
              n_utility: int | None = None, items_per_author: int | None = None,
              bio_source: str = "answers") -> World:
    """Read TOFU into a World.

    forget: forget10_perturbed (400), prefix/entity from the annotated forget10 file (367; None for
    the other 33); retain: retain90 (3600) or its first `n_retain_authors` authors; retain_eval:
    retain_perturbed (400) restricted to the kept retain authors; holdout: holdout10 (400);
    real_authors (100) / world_facts (117): the perturbed files with the plain files' options.
    forget_bios: one biography per forget author, a stand-in for the rewrite of the
    `retain90_forget10_bio` pool (Open-Unlearning's text is not public): the author's answers
    joined (`bio_source="answers"`) or prose from the paraphrased answers (`"paraphrased"`,
    `_forget_bios`).
    idk: the lines of idontknow.jsonl. public_text, other_bios: the synthetic world's (`seed`)
    public and unrelated entities, plus the real-authors and world-facts QA in raw format.
    Authors are named by position: `forget_author_k`, `retain_author_k`, `holdout_author_k`.
    A smaller world (the `smol` presets) keeps the first `n_forget_authors` / `n_holdout_authors`
    authors, the first `items_per_author` QA of every author, the first `n_utility` items of each
    utility split. Folder: `folder`, else `$UDS_TOFU_DIR`, else each file from the Hub.
    """
    folder = folder if folder is not None else default_tofu_dir()
    for name, n in (("n_retain_authors", n_retain_authors), ("n_forget_authors", n_forget_authors),
                    ("n_holdout_authors", n_holdout_authors), ("n_utility", n_utility),
                    ("items_per_author", items_per_author)):
        if n is not None and n < 1:
            raise UdsInputError(f"{name} must be at least 1, got {n}")
    load, idk = _folder_loader(Path(folder).expanduser()) if folder else _hub_loader()

    data = {stem: load(stem) for stem in QA_FILES}
    for stem in ("forget10_perturbed", "retain_perturbed"):
        _check_fields(data[stem], stem, ("question", "answer", "paraphrased_question",
                                         "paraphrased_answer", "perturbed_answer"))
    for stem in ("retain90", "holdout10"):
        _check_fields(data[stem], stem, ("question", "answer"))
    for stem in ("real_authors_perturbed", "world_facts_perturbed"):
        _check_fields(data[stem], stem, ("question", "answer", "perturbed_answer"))
    _check_fields(data[ANNOTATED], ANNOTATED, ("question", "answer", "prefix", "entity"))

    forget = _first_authors(_forget_split(data["forget10_perturbed"], data[ANNOTATED]), n_forget_authors,
                            items_per_author)
    retain, retain_eval = _retain_splits(data["retain90"], data["retain_perturbed"], n_retain_authors)
    if items_per_author is not None:
        kept = {(it["question"], it["answer"]) for it in _first_authors(retain, None, items_per_author)}
        retain = [it for it in retain if (it["question"], it["answer"]) in kept]
        retain_eval = [it for it in retain_eval if (it["question"], it["answer"]) in kept]
    holdout = _first_authors([_qa_item(i, rec, f"holdout_author_{i // AUTHOR_QA}")
                              for i, rec in enumerate(data["holdout10"])], n_holdout_authors, items_per_author)
    real_authors = _utility_split(data["real_authors_perturbed"], data["real_authors"], "real_authors")[:n_utility]
    world_facts = _utility_split(data["world_facts_perturbed"], data["world_facts"], "world_facts")[:n_utility]

    # Two train authors is the generator's minimum; only its public and other entities are used.
    filler = generate_synthetic_world(seed, n_train_authors=2, n_holdout_authors=0,
                                      n_public=PUBLIC_ENTITIES, n_other=OTHER_ENTITIES, forget_fraction=0.5)
    utility_docs = [raw_qa(it["question"], it["answer"]) for it in real_authors + world_facts]
    return World(
        kind="tofu",
        forget=forget,
        retain=retain,
        holdout=holdout,
        retain_eval=retain_eval,
        real_authors=real_authors,
        world_facts=world_facts,
        public_text=filler.public_text + utility_docs,
        forget_bios=_forget_bios(forget, bio_source, seed),
        other_bios=filler.other_bios,
        idk=idk,
    )
