"""The fact database of an LMLM: (subject, relation, object) triples and alias maps in SQLite.

Tables: `triplets(id, subject, relation, object)` and `aliases(kind, alias, canonical)` (kind is
subject | relation | object; an alias points at its canonical name, chains allowed, cycles not).
Sources: the published JSON schema (`entities`, `relationships`, `return_values`, `triplets`,
optionally `aliases` = {kind: {alias: canonical}}), or a SQLite file with those two tables. A file
is only ever read: it is copied into an in-memory database (`sqlite3` backup API), so no audit
step can change the user's file.

Lookup: the nearest stored (subject, relation) by `difflib.SequenceMatcher` ratio, the mean of the
subject and relation ratios (casefolded), answered when the best score reaches `threshold`.
SQLite here is built with FTS5, but `bm25()` is unbounded and depends on the corpus size, and it
scores 0 without a shared whole token; a bounded character-level ratio lets one threshold serve
every database and matches near-miss spellings, which is where retrieval artefacts come from.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Iterable

from uds_core.errors import UdsInputError

UNKNOWN = "unknown"          # the value a lookup returns when nothing passes the threshold
JSON_KEYS = ("entities", "relationships", "return_values", "triplets")
ALIAS_KINDS = ("subject", "relation", "object")
SCHEMA = """
CREATE TABLE triplets (id INTEGER PRIMARY KEY, subject TEXT NOT NULL, relation TEXT NOT NULL, object TEXT NOT NULL);
CREATE TABLE aliases (kind TEXT NOT NULL, alias TEXT NOT NULL, canonical TEXT NOT NULL, PRIMARY KEY (kind, alias));
"""


@dataclass(frozen=True)
class Triple:
    id: int
    subject: str
    relation: str
    object: str


@dataclass(frozen=True)
class Candidate:
    triple: Triple
    score: float             # in [0, 1]

    def to_dict(self) -> dict:
        t = self.triple
        return {"id": t.id, "triple": [t.subject, t.relation, t.object], "score": round(self.score, 4)}


@dataclass(frozen=True)
class LookupResult:
    value: str               # the best candidate's object, or UNKNOWN
    candidates: tuple[Candidate, ...]


def similarity(a: str, b: str) -> float:
    """Character-level similarity in [0, 1] (difflib ratio of the casefolded strings)."""
    return SequenceMatcher(None, a.casefold(), b.casefold(), autojunk=False).ratio()


class FactDB:
    """An in-memory SQLite fact database (never attached to the user's file)."""

    def __init__(self, conn: sqlite3.Connection, name: str = "db"):
        self.conn, self.name = conn, name
        self._check_tables()
        self.triples = [Triple(*row) for row in conn.execute(
            "SELECT id, subject, relation, object FROM triplets ORDER BY id")]
        self._alias = {k: dict(conn.execute("SELECT alias, canonical FROM aliases WHERE kind = ?", (k,)))
                       for k in ALIAS_KINDS}
        self._scores: dict[tuple[str, str], list[tuple[float, int]]] = {}
        for kind in ALIAS_KINDS:   # fail early on a cycle
            for name_ in self._alias[kind]:
                self.canonical(kind, name_)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_records(cls, triplets: Iterable[Iterable[str]], aliases: dict | None = None,
                     name: str = "db") -> "FactDB":
        conn = sqlite3.connect(":memory:")
        conn.executescript(SCHEMA)
        rows = []
        for i, t in enumerate(triplets):
            t = list(t)
            if len(t) != 3 or not all(isinstance(x, str) for x in t):
                raise UdsInputError(f"{name}: triplet {i} is not [subject, relation, object] strings: {t!r}")
            rows.append((i, *t))
        conn.executemany("INSERT INTO triplets VALUES (?, ?, ?, ?)", rows)
        for kind, mapping in (aliases or {}).items():
            if kind not in ALIAS_KINDS:
                raise UdsInputError(f"{name}: unknown alias kind {kind!r} (expected {', '.join(ALIAS_KINDS)})")
            conn.executemany("INSERT OR REPLACE INTO aliases VALUES (?, ?, ?)",
                             [(kind, a, c) for a, c in mapping.items() if a != c])
        conn.commit()
        return cls(conn, name)

    @classmethod
    def open(cls, path: str | Path, alias_groups: dict | None = None) -> "FactDB":
        """A database file (.json in the published schema, or SQLite), read into memory."""
        p = Path(path)
        if not p.is_file():
            raise UdsInputError(f"no database file at {str(path)!r}")
        db = cls._from_json(p) if p.suffix.lower() == ".json" else cls._from_sqlite(p)
        if alias_groups:
            db.add_alias_groups(alias_groups)
        return db

    @classmethod
    def _from_sqlite(cls, p: Path) -> "FactDB":
        try:   # read-only URI: the file cannot be written through this connection
            src = sqlite3.connect(f"file:{p.resolve()}?mode=ro", uri=True)
            conn = sqlite3.connect(":memory:")
            src.backup(conn)
            src.close()
        except sqlite3.DatabaseError as e:
            raise UdsInputError(f"{p}: not a SQLite database or JSON file ({e})") from None
        return cls(conn, p.name)

    @classmethod
    def _from_json(cls, p: Path) -> "FactDB":
        try:
            data = json.loads(p.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UdsInputError(f"{p}: not valid JSON ({e})") from None
        missing = [k for k in JSON_KEYS if not isinstance(data, dict) or k not in data]
        if missing:
            raise UdsInputError(f"{p}: database lacks required key(s) {', '.join(missing)}")
        return cls.from_records(data["triplets"], data.get("aliases") or {}, p.name)

    def _check_tables(self) -> None:
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in ("triplets", "aliases") if t not in have]
        if missing:
            raise UdsInputError(f"{self.name}: database lacks required table(s) {', '.join(missing)}")
        cols = {r[1] for r in self.conn.execute("PRAGMA table_info(triplets)")}
        if not {"id", "subject", "relation", "object"} <= cols:
            raise UdsInputError(f"{self.name}: table triplets needs columns id, subject, relation, object")

    def add_alias_groups(self, groups: dict[str, list[list[str]]]) -> None:
        """Merge groups of equivalent names (the published prompts' `subject_aliases` etc.) into
        the alias maps: each member's chain end is pointed at the first member's chain end, so
        the stored maps are extended, never rewritten, and no cycle can arise."""
        for kind, gs in groups.items():
            amap = self._alias[kind]
            for g in gs:
                target = self._root(kind, g[0])
                for name_ in g[1:]:
                    root = self._root(kind, name_)
                    if root != target:
                        amap[root] = target
                        self.conn.execute("INSERT INTO aliases VALUES (?, ?, ?)", (kind, root, target))

    def _root(self, kind: str, name: str) -> str:
        """End of `name`'s alias chain, spelled as stored (`canonical` has checked for cycles)."""
        self.canonical(kind, name)
        while name in self._alias[kind]:
            name = self._alias[kind][name]
        return name

    def save(self, path: str | Path) -> None:
        """Write this database to a new SQLite file."""
        out = sqlite3.connect(str(path))
        self.conn.backup(out)
        out.close()

    # -- aliases and deletion -----------------------------------------------------------------
    def canonical(self, kind: str, name: str) -> str:
        """The end of `name`'s alias chain (casefolded); an alias cycle is bad input."""
        seen = [name]
        cur = name
        while cur in self._alias[kind]:
            cur = self._alias[kind][cur]
            if cur in seen:
                raise UdsInputError(f"{self.name}: alias cycle among {kind}s: {' -> '.join(seen + [cur])}")
            seen.append(cur)
        return cur.casefold()

    def names_equivalent_to(self, kind: str, name: str) -> list[str]:
        """Every stored alias whose chain ends where `name`'s does."""
        canon = self.canonical(kind, name)
        return [a for a in self._alias[kind] if self.canonical(kind, a) == canon]

    def equivalent(self, t: Triple, s: str, r: str, o: str) -> bool:
        return (self.canonical("subject", t.subject) == self.canonical("subject", s)
                and self.canonical("relation", t.relation) == self.canonical("relation", r)
                and self.canonical("object", t.object) == self.canonical("object", o))

    def deletion_set(self, s: str, r: str, o: str) -> list[int]:
        """Ids of the alias closure of (s, r, o): every triple alias-equivalent in all three parts."""
        ids = [t.id for t in self.triples if self.equivalent(t, s, r, o)]
        if not ids:
            raise UdsInputError(f"{self.name}: target ({s!r}, {r!r}, {o!r}) is not in the database")
        return ids

    def delete_verified(self, s: str, r: str, o: str) -> list[int]:
        """Delete the target's alias closure inside a transaction, verify that no remaining triple
        is equivalent to it, roll back; returns the deleted ids. Raises when verification fails."""
        ids = self.deletion_set(s, r, o)
        self.conn.execute("SAVEPOINT audit_delete")
        try:
            self.conn.executemany("DELETE FROM triplets WHERE id = ?", [(i,) for i in ids])
            left = [Triple(*row) for row in self.conn.execute("SELECT id, subject, relation, object FROM triplets")]
            survivors = [t.id for t in left if self.equivalent(t, s, r, o)]
            if survivors:
                raise RuntimeError(f"deletion of ({s!r}, {r!r}, {o!r}) left equivalent triples {survivors}")
        finally:
            self.conn.execute("ROLLBACK TO audit_delete")
            self.conn.execute("RELEASE audit_delete")
        return ids

    # -- lookup -------------------------------------------------------------------------------
    def _ranked(self, subject: str, relation: str) -> list[tuple[float, int]]:
        """(score, index into self.triples), best first; cached per query."""
        key = (subject, relation)
        if key not in self._scores:
            pair_score: dict[tuple[str, str], float] = {}
            scored = []
            for i, t in enumerate(self.triples):
                k = (t.subject, t.relation)
                if k not in pair_score:
                    pair_score[k] = 0.5 * (similarity(subject, t.subject) + similarity(relation, t.relation))
                scored.append((-pair_score[k], i))
            self._scores[key] = [(-s, i) for s, i in sorted(scored)]
        return self._scores[key]

    def lookup(self, subject: str, relation: str, threshold: float, exclude: frozenset[int] = frozenset(),
               k: int = 5) -> LookupResult:
        """The object of the nearest stored (subject, relation) not in `exclude` (ids), when its
        score reaches `threshold`, else UNKNOWN; with the top-`k` candidates for the trace.
        `exclude` = a deletion set gives what the database answers after that deletion."""
        cands = []
        for score, i in self._ranked(subject, relation):
            t = self.triples[i]
            if t.id in exclude:
                continue
            cands.append(Candidate(t, score))
            if len(cands) == k:
                break
        value = cands[0].triple.object if cands and cands[0].score >= threshold else UNKNOWN
        return LookupResult(value, tuple(cands))
