"""Every environment knob the extension reads is documented in docs/knobs.md (CPU only).

A knob is a quoted "TK_..." name in csrc/ or torch_tk/ (dispatch.cpp's env_int / env_flag and
launch_impl.cuh's reads); a new one that is not written up fails here, so every behaviour switch
stays visible to users.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = ("csrc", "torch_tk")
SUFFIXES = {".cpp", ".h", ".cu", ".cuh", ".py", ".hip"}


def knobs_in_sources():
    names = set()
    for top in SOURCES:
        for path in (ROOT / top).rglob("*"):
            if path.suffix in SUFFIXES and path.is_file():
                names.update(re.findall(r'"(TK_[A-Z0-9_]+)"', path.read_text(errors="replace")))
    return names


def test_every_knob_is_documented():
    names = knobs_in_sources()
    assert "TK_HOPPER_EARLY_START" in names and len(names) > 20, sorted(names)  # the scan still finds the knobs
    doc = (ROOT / "docs" / "knobs.md").read_text()
    missing = sorted(n for n in names if not re.search(r"`" + n + r"(=|`)", doc))
    assert not missing, f"knobs read by the extension but not in docs/knobs.md: {missing}"
