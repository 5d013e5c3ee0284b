"""``warp.examples.get_asset_directory()``: where the reference's example programs find their asset files."""

from __future__ import annotations

import importlib.metadata
import os

import pytest

import treadle.examples as examples


def test_asset_directory_of_an_installed_warp_lang_distribution() -> None:
    try:
        importlib.metadata.distribution("warp-lang")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("warp-lang is not installed (its example assets are what this looks up)")
    path = examples.get_asset_directory()
    assert os.path.isdir(path)
    assert os.path.isfile(os.path.join(path, "bunny.usd"))


def test_without_warp_lang_the_directory_next_to_the_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    assert examples.get_asset_directory() == os.path.join(examples.get_source_directory(), "assets")
