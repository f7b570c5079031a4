"""Shared fixtures: the real data sets in ../shared/data (tests skip when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

import lcbayes as lcb

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_csv(name: str) -> Path:
    """Path of a shared data file, or skip the test with the reason."""
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared data sets live beside the project, not in it)")
    return path


@pytest.fixture(scope="session")
def carcinoma() -> lcb.Dataset:
    """Agresti's carcinoma ratings: 118 slides x 7 pathologists, coded 1/2."""
    return lcb.Dataset.from_csv(shared_csv("carcinoma.csv"))


#: Test files that run a whole notebook (minutes each): collected first, so that pytest-xdist
#: (``--dist loadfile``) starts them at once on different workers rather than last.
LONG_FILES = ("test_notebooks.py", "test_notebook_02.py")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in LONG_FILES)  # stable: order kept otherwise
