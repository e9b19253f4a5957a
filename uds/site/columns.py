"""The leaderboard's columns: headline first, the rest in named groups a reader switches on, each
with its label, its direction (what a higher value means) and how it prints.

Labels and directions of metrics and aggregates come from the one table `uds leaderboard` uses
(meta_eval/names.py: the metric registry's labels and orientations, spec §6.1's aggregates); a
metric's group follows its registered category, in registry order. Only what is not a metric is
named here: the training settings of build manifests and the counts. A column the table does not
know goes to the group "other", without a direction (no rank).
"""

from __future__ import annotations

from uds_leaderboard.rows import DECIMALS, UDS_DECIMALS
from meta_eval.names import LOWER_IS_BETTER, name_of
from metrics.registry import REGISTRY

HEADLINE = ("uds", "mem", "privacy", "utility_rel", "overall")
GROUP_LABELS = {"published": "published (reference)", "memorisation": "memorisation", "generation": "generation",
                "mia": "MIA", "representation": "representation", "utility": "utility detail", "training": "training"}
# a registered metric's category -> its group; a category not named here is a group of its own
# (`group_labels`), so a metric of a new category needs no edit here
CATEGORY_GROUP = {"memorization": "memorisation", "memorization_bits": "memorisation", "generation": "generation",
                  "mia": "mia", "mia_normalised": "mia", "representation": "representation", "utility": "utility"}
# the aggregates outside the headline -> their group (after the group's metrics)
AGGREGATE_GROUP = {"privacy_mia": "mia", "utility": "utility"}
# not metrics: the training columns of build manifests and published rows, and counts
SETTINGS = {"lr": "learning rate", "epochs": "epochs", "batch_size": "batch size", "alpha": "α", "beta": "β",
            "gamma": "γ", "delta": "δ", "layer": "layer", "steer": "steering", "train_seconds": "train s"}
OTHER_LABELS = {"n_scored": "n scored"}
OTHER = "other"
PUBLISHED_PREFIX = "pub_"      # the reference's published value of a key, beside ours
# printed as: "f<d>" fixed decimals, "int", "sci" (learning rates), "plain" (shortest form)
FORMATS = {"lr": "sci", "epochs": "int", "batch_size": "int", "layer": "int", "n_scored": "int",
           "train_seconds": "f1", "alpha": "plain", "beta": "plain", "gamma": "plain", "delta": "plain",
           "steer": "plain"}


def group_of(key: str) -> str:
    """The named group of a non-headline column ("other" when unknown)."""
    if key.startswith(PUBLISHED_PREFIX):
        return "published"
    if key in REGISTRY:
        category = REGISTRY[key].category
        return CATEGORY_GROUP.get(category, category)
    if key in SETTINGS:
        return "training"
    return AGGREGATE_GROUP.get(key, OTHER)


def format_of(key: str) -> str:
    """How a column's values print (the format codes above)."""
    key = key.removeprefix(PUBLISHED_PREFIX)
    return FORMATS.get(key, f"f{UDS_DECIMALS if key == 'uds' else DECIMALS}")


def column(key: str) -> dict:
    """What the page needs to show one column: label, group, direction (None: no direction, no
    rank), its sentence, how it prints, and a title for the header."""
    if key.startswith(PUBLISHED_PREFIX):
        base = column(key.removeprefix(PUBLISHED_PREFIX))
        return base | {"key": key, "label": base["label"] + " (published)", "group": "published",
                       "title": "the reference's published value (the published table given to --results); "
                                + base["title"]}
    n = name_of(key)
    direction = n.direction if n else None
    sentence = n.sentence if n else ""
    label = n.label if n else SETTINGS.get(key) or OTHER_LABELS.get(key, key)
    title = "; ".join(t for t in ((n.title if n else label), sentence, f"key {key}") if t)
    return {"key": key, "label": label, "group": "headline" if key in HEADLINE else group_of(key),
            "direction": direction, "lower_is_better": direction in LOWER_IS_BETTER, "sentence": sentence,
            "format": format_of(key), "title": title}


def group_labels() -> dict[str, str]:
    """GROUP_LABELS, with a group (labelled by its name) for each registered category that
    CATEGORY_GROUP does not name, placed before the training settings."""
    named = dict(GROUP_LABELS)
    training = named.pop("training")
    new = {c: c.replace("_", " ") for c in dict.fromkeys(s.category for s in REGISTRY.values())
           if c not in CATEGORY_GROUP}
    return named | new | {"training": training}


def _listed() -> list[str]:
    """Every key a named group holds, in group order: the registry's metrics by category (registry
    order), then the group's aggregates, then the training settings."""
    published = [PUBLISHED_PREFIX + k for k in HEADLINE]
    keys = [k for g in group_labels() for k in published + list(REGISTRY) + list(AGGREGATE_GROUP) + list(SETTINGS)
            if k not in HEADLINE and group_of(k) == g]
    return list(dict.fromkeys(keys))


def columns_of(present: set[str]) -> list[dict]:
    """The columns some model has a value for: headline in HEADLINE order, then each group's in
    its order, then the others alphabetically."""
    order = [k for k in HEADLINE if k in present] + [k for k in _listed() if k in present]
    order += sorted(present - set(order))
    return [column(k) for k in order]


def groups_of(cols: list[dict]) -> list[dict]:
    """The non-empty groups, in `group_labels` order then "other", with their columns."""
    out = []
    for name, label in list(group_labels().items()) + [(OTHER, OTHER)]:
        keys = [c["key"] for c in cols if c["group"] == name]
        if keys:
            out.append({"name": name, "label": label, "columns": keys})
    return out
