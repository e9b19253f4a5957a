"""The tiny world's fact database in the published JSON schema, its four variants
(spec-probes §3.4) and audit prompts in the six styles, deterministic from a seed.

Facts: every fact of the train authors (forget + retain), with relation labels. Targets (the facts
audited and deleted): the forget authors' facts. Variants:
- `base`: canonical triples;
- `alias`: each fact only under two aliased (subject, relation) forms;
- `noise`: base + a decoy per chosen fact reaching the object through a paraphrased subject;
- `collision`: base + a near-miss per chosen fact: same subject, a near relation, mostly another
  object; for about a third the near relation's value coincides with the fact's, as in the
  published countries collision (`Largest City` = `Capital` for 13 of its 40 near-miss entries),
  which is how a collision lets a deleted fact survive through retrieval.
"""

from __future__ import annotations

import random

from checkpoints.lmlm.prompts import STYLES
from checkpoints.world.schema import World
from checkpoints.world.synthetic import FACT_KINDS

VARIANTS = ("base", "alias", "noise", "collision")
COLLISION_SAME_OBJECT = 1 / 3   # share of near-miss entries whose value coincides (published: 13/40)
AUDIT_DATA_VERSION = "2"        # bump when the variants change: cached world audit folders are rewritten

# fact kind -> (relation label, two relation aliases, near-miss relation for `collision`); the near
# miss is the label most similar to the relation's after its aliases (tested), so that a lookup
# drifts to it once the fact is deleted
RELATIONS: dict[str, tuple[str, tuple[str, str], str]] = {
    "birthplace": ("Birthplace", ("Place of Birth", "Born In"), "Birthplace Listed"),
    "birth_date": ("Birth Date", ("Date of Birth", "Born On"), "Birth Date Listed"),
    "genre": ("Genre", ("Literary Genre", "Writes In"), "Second Genre"),
    "father_profession": ("Father's Profession", ("Father's Occupation", "Father's Job"), "Stepfather's Profession"),
    "mother_profession": ("Mother's Profession", ("Mother's Occupation", "Mother's Job"), "Stepmother's Profession"),
    "award": ("Award", ("Prize Won", "Honor Received"), "Award Nomination"),
    "first_book": ("First Book", ("Debut Book", "Debut Title"), "First Book Listed"),
    "known_book": ("Best-Known Book", ("Most Famous Book", "Signature Book"), "Least-Known Book"),
    "theme": ("Recurring Theme", ("Main Theme", "Central Theme"), "Rare Theme"),
    "country": ("Home Country", ("Country of Origin", "Nationality"), "Country of Residence"),
}
DECOY_SUBJECTS = ("Biography of {n}", "Estate of {n}", "Official Website of {n}")
FEWSHOT_HEAD = ("Answer the final question with a short factual phrase.\n\n"
                "Question: Where was Ada Lovelace born?\nAnswer: London\n\n"
                "Question: In what year was Pride and Prejudice published?\nAnswer: 1813\n\n")


def author_facts(world: World) -> list[tuple[str, str, str, bool]]:
    """(author, fact kind, value, is_target) for every train author's fact; targets = forget."""
    out = []
    for split, target in ((world.forget, True), (world.retain, False)):
        for i in range(0, len(split), len(FACT_KINDS)):
            items = split[i:i + len(FACT_KINDS)]
            for kind, it in zip(FACT_KINDS, items):
                out.append((it["author"], kind.key, it["entity"], target))
    return out


def target_positions(world: World) -> list[int]:
    """Position in `author_facts` of each target fact, in audit order (audit fact_id t is the t-th)."""
    return [j for j, (_, _, _, is_target) in enumerate(author_facts(world)) if is_target]


def subject_aliases(name: str) -> tuple[str, str]:
    given, _, family = name.partition(" ")
    return f"{family}, {given}", f"the author {name}"


def build_variant(world: World, variant: str, seed: int = 0) -> tuple[dict, list[dict]]:
    """(database in the published JSON schema + `aliases`, target rows) of one variant. Target
    rows: subject, relation, gold_object, kind and the alias lists, one per target fact."""
    rng = random.Random(f"{seed}:{variant}")
    facts = author_facts(world)
    pool: dict[str, list[str]] = {}
    for _, kind, value, _ in facts:
        pool.setdefault(kind, []).append(value)
    triplets, targets = [], []
    aliases: dict[str, dict[str, str]] = {"subject": {}, "relation": {}}
    for author, kind, value, is_target in facts:
        rel, rel_alias, near = RELATIONS[kind]
        s_alias = subject_aliases(author)
        for a in s_alias:
            aliases["subject"][a] = author
        for a in rel_alias:
            aliases["relation"][a] = rel
        if variant == "alias":
            stored = [(s_alias[j], rel_alias[j], value) for j in (0, 1)]
        else:
            stored = [(author, rel, value)]
        triplets += [list(t) for t in stored]
        if variant == "noise" and rng.random() < 0.8:
            triplets.append([rng.choice(DECOY_SUBJECTS).format(n=author), rel, value])
        if variant == "collision" and rng.random() < 0.4:
            same = rng.random() < COLLISION_SAME_OBJECT
            triplets.append([author, near, value if same else rng.choice([v for v in pool[kind] if v != value])])
        if is_target:
            s, r = stored[0][:2]
            targets.append({"subject": s, "relation": r, "gold_object": value, "kind": kind,
                            "subject_aliases": [x for x in (author, *s_alias) if x != s],
                            "relation_aliases": [x for x in (rel, *rel_alias) if x != r]})
    db = {"entities": sorted({t[0] for t in triplets}), "relationships": sorted({t[1] for t in triplets}),
          "return_values": sorted({t[2] for t in triplets}), "triplets": triplets, "aliases": aliases}
    return db, targets


def _kind(key: str):
    return next(k for k in FACT_KINDS if k.key == key)


def _prefix(kind_key: str, subject: str, value: str) -> str:
    """The answer sentence up to the value (for cloze and continuation prompts)."""
    head = _kind(kind_key).answers[0].split("{v}")[0]
    article = "an" if value[:1].lower() in "aeiou" else "a"
    return head.format(name=subject, a=article).rstrip()


def render_prompt(style: str, kind_key: str, subject: str, value: str, variant_of_question: int = 0) -> str:
    """The prompt text of one target fact in one style."""
    qs = _kind(kind_key).questions
    q = qs[variant_of_question % len(qs)].format(name=subject)
    table = {
        "direct": q,
        "paraphrased": qs[(variant_of_question + 1) % len(qs)].format(name=subject),
        "contextual": f"Context: I am compiling a concise factual profile for {subject}. "
                      f"Answer with a short factual phrase.\nQuestion: {q}",
        "cloze": f"Complete the sentence with the missing fact: {_prefix(kind_key, subject, value)} ____.",
        "continuation": f"Tell me about {subject}. {_prefix(kind_key, subject, value)}",
        "fewshot": f"{FEWSHOT_HEAD}Question: {q}\nAnswer:",
    }
    return table[style]


def prompt_rows(targets: list[dict], style: str) -> list[dict]:
    """Published-schema prompt rows of one style."""
    rows = []
    for i, t in enumerate(targets):
        rows.append({"prompt_id": i, "fact_id": i, "subject": t["subject"], "relation": t["relation"],
                     "gold_object": t["gold_object"],
                     "prompt_text": render_prompt(style, t["kind"], t["subject"], t["gold_object"]),
                     "subject_aliases": t["subject_aliases"], "relation_aliases": t["relation_aliases"]})
    return rows


def write_world_audit(world: World, folder, seed: int = 0) -> None:
    """`folder/<variant>.json` and `folder/prompts/<variant>/prompts_<style>.jsonl` (published layout)."""
    import json
    from pathlib import Path

    folder = Path(folder)
    for variant in VARIANTS:
        db, targets = build_variant(world, variant, seed)
        pdir = folder / "prompts" / variant
        pdir.mkdir(parents=True, exist_ok=True)
        (folder / f"{variant}.json").write_text(json.dumps(db, ensure_ascii=False, indent=1))
        for style, stem in STYLES.items():
            lines = [json.dumps(r, ensure_ascii=False) for r in prompt_rows(targets, style)]
            (pdir / f"prompts_{stem}.jsonl").write_text("\n".join(lines) + "\n")


def ensure_world_audit(preset: str, seed: int = 0):
    """The tiny world's audit folder (`<world>/lmlm_audit`: four variant databases and their
    prompts, the published layout), written on first use (atomically, as the world's data)."""
    import shutil

    from checkpoints.world.store import load_world
    from uds_core.paths import world_dir

    folder = world_dir(preset, seed) / "lmlm_audit"
    stamp = folder / "VERSION"
    if not (stamp.is_file() and stamp.read_text() == AUDIT_DATA_VERSION):
        tmp = folder.with_name("lmlm_audit.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        write_world_audit(load_world(preset, seed), tmp, seed)
        (tmp / "VERSION").write_text(AUDIT_DATA_VERSION)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.replace(folder)
    return folder
