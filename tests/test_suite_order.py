"""The order tests/conftest.py deals files to the xdist workers in, and the file names it lists."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests import conftest

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Item:
    nodeid: str
    fixturenames: tuple[str, ...] = ()
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None


def test_every_file_the_conftest_names_exists():
    named = [conftest.FIRST, *conftest.LONG, *(n.split("::")[0] for n in conftest.NOT_QUICK)]
    assert [n for n in named if not (REPO / n).is_file()] == []


def test_world_builder_then_gguf_then_quick_then_long_then_by_count():
    items = [
        Item("tests/test_a.py::one", ("test_world",)),
        Item("tests/test_quick.py::one", (), {"quick"}),
        Item("tests/test_quick.py::two", (), {"quick"}),
        Item(f"{conftest.LONG[0]}::one", ("test_world",)),
        Item("tests/test_b.py::one", ("test_world",)),
        Item("tests/test_b.py::two", ("uds",)),
        Item("tests/test_g.py::one", ("smol_converted",)),
        Item("tests/test_mixed.py::slow_one", ("gguf_home",), {"slow"}),   # deselected by default
        Item("tests/test_mixed.py::one", ("test_world",)),
        Item(f"{conftest.FIRST}::one", ("test_world",)),
        Item(f"{conftest.FIRST}::two", ("test_world",)),
    ]
    ordered = [i.nodeid for i in conftest.in_file_order(items)]
    assert ordered == [f"{conftest.FIRST}::one", f"{conftest.FIRST}::two", "tests/test_g.py::one",
                       "tests/test_quick.py::one", "tests/test_quick.py::two", f"{conftest.LONG[0]}::one",
                       "tests/test_b.py::one", "tests/test_b.py::two",
                       "tests/test_a.py::one", "tests/test_mixed.py::slow_one", "tests/test_mixed.py::one"]
