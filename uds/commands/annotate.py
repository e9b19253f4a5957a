"""`uds annotate`: entity spans (prefix, entity) for QA records that have none.

Reads a JSON list of QA records (this toolkit's format, or a TOFU file: `forget10_perturbed.json`,
`forget10.json`'s prompt/response, `full.json`'s arrays one per line) and writes the annotated JSON
`uds score --data` reads, each record with `span_method` (uds_core/spans: polar, perturbation, question,
or given). Records where no span is found are listed on stderr and left out, never guessed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from uds_core import atomic
from uds_core.errors import UdsInputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("annotate", help="entity spans for QA records that have none",
                       description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, metavar="FILE", help="JSON list of QA records (question, answer; "
                   "paraphrased_answer and perturbed answers used when present)")
    p.add_argument("--out", metavar="FILE", help="annotated JSON to write (default: ./<data stem>_annotated.json)")
    p.add_argument("--reannotate", action="store_true",
                   help="find spans for every record, also those that carry prefix and entity")
    p.add_argument("--no-perturbed", action="store_true",
                   help="ignore perturbed answers: plain (question, answer) rules only")
    p.set_defaults(func=run)


def _read(path: str) -> list[dict]:
    from checkpoints.world.tofu import read_records

    if not Path(path).is_file():
        raise UdsInputError(f"data file not found: {path}")
    return read_records(Path(path))


def _standard(record: dict, no_perturbed: bool) -> dict:
    """TOFU's `perturbed_answer` under this toolkit's name; dropped with --no-perturbed."""
    rec = {k: v for k, v in record.items() if k != "perturbed_answer"}
    wrong = record.get("perturbed_answers", record.get("perturbed_answer"))
    if wrong is not None:
        rec["perturbed_answers"] = [wrong] if isinstance(wrong, str) else list(wrong)
    if no_perturbed:
        rec.pop("perturbed_answers", None)
    return rec


def run(args: argparse.Namespace) -> int:
    from uds_core.spans.annotate import annotate_records

    raw = _read(args.data)
    records = [_standard(r, args.no_perturbed) for r in raw]
    out, without = annotate_records(records, args.data, keep_given=not args.reannotate)
    if not out:
        raise UdsInputError(f"{args.data}: no span found for any of its {len(raw)} records; nothing written")
    target = Path(args.out) if args.out else Path(f"{Path(args.data).stem}_annotated.json")
    atomic.write_json(target, out, indent=1, ensure_ascii=False)
    methods = ", ".join(f"{n} {m}" for m, n in sorted(Counter(r["span_method"] for r in out).items()))
    print(f"annotated {len(out)} of {len(raw)} records ({methods}): {target}")
    if without:
        print(f"uds annotate: no span found, left out: idx {', '.join(map(str, without))}", file=sys.stderr)
    return 0
