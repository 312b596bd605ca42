import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lib.core import seeds

LIB = Path(__file__).resolve().parents[2] / "lib"


@pytest.fixture
def offset_env(monkeypatch):
    """Set ``CIRCUITS_SEED`` for one test; the cached offset is read again before and after."""

    def set_offset(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv(seeds.SEED_ENV, raising=False)
        else:
            monkeypatch.setenv(seeds.SEED_ENV, value)
        seeds.offset.cache_clear()

    yield set_offset
    seeds.offset.cache_clear()


@pytest.mark.parametrize(("text", "expected"), [(None, 0), ("", 0), ("  ", 0), ("0", 0), ("3", 3), (" 12 ", 12)])
def test_parse_offset(text, expected):
    assert seeds.parse_offset(text) == expected


@pytest.mark.parametrize("text", ["-1", "1.5", "one", "1e3", "0x2"])
def test_parse_offset_rejects(text):
    with pytest.raises(ValueError, match="CIRCUITS_SEED must be a non-negative integer"):
        seeds.parse_offset(text)


def test_default_is_the_books_seeds(offset_env):
    offset_env(None)
    assert seeds.offset() == 0
    assert [seeds.seed(b) for b in (0, 1, 2, 239, 1234)] == [0, 1, 2, 239, 1234]
    expected = torch.Generator().manual_seed(7)
    assert torch.equal(torch.rand(5, generator=seeds.generator(7)), torch.rand(5, generator=expected))


def test_offset_moves_every_seed_by_the_stride(offset_env):
    offset_env("2")
    assert seeds.offset() == 2
    assert seeds.seed(0) == 2 * seeds.STRIDE
    assert seeds.seed(1234) == 2 * seeds.STRIDE + 1234
    expected = torch.Generator().manual_seed(2 * seeds.STRIDE + 7)
    assert torch.equal(torch.rand(5, generator=seeds.generator(7)), torch.rand(5, generator=expected))


def test_offset_is_read_once(offset_env):
    offset_env("1")
    assert seeds.seed(3) == seeds.STRIDE + 3
    os.environ[seeds.SEED_ENV] = "5"  # the fixture's monkeypatch restores it
    assert seeds.seed(3) == seeds.STRIDE + 3


def test_invalid_environment_raises(offset_env):
    offset_env("-2")
    with pytest.raises(ValueError, match="CIRCUITS_SEED.*-2"):
        seeds.offset()


@pytest.mark.parametrize("base", [-1, seeds.STRIDE, 1.0, True])
def test_base_outside_the_stride_raises(base):
    with pytest.raises(ValueError, match="base seed"):
        seeds.seed(base)


def test_announce_only_off_the_default(offset_env, capsys):
    offset_env(None)
    seeds.announce()
    assert capsys.readouterr().out == ""
    offset_env("3")
    seeds.announce()
    assert "CIRCUITS_SEED=3" in capsys.readouterr().out


def test_no_literal_default_seed_in_lib():
    """Every default seed of lib is the book's seed in force (``seeds.seed(0)``), so the switch moves it too."""
    literal = re.compile(r"seed: int = \d")
    found = [
        f"{p.relative_to(LIB)}: {line.strip()}"
        for p in LIB.rglob("*.py")
        for line in p.read_text().splitlines()
        if literal.search(line)
    ]
    assert not found, found


PROBE = """
import json
from lib.core import tokens
from lib.core.train import TrainConfig
from lib.ocr import onelayer, sentences, symbolic
from lib.induction import models
import inspect
print(json.dumps({
    "eval": tokens.EVAL_SEED,
    "shipped": tokens.SHIPPED_EVAL_SEED,
    "train": TrainConfig().seed,
    "symbolic": symbolic.SymbolicConfig().seed,
    "sentences": sentences.SentenceConfig().seed,
    "onelayer": onelayer.OneLayerConfig(vocab_size=4).seed,
    "model": inspect.signature(models.train_model).parameters["seed"].default,
}))
"""


@pytest.mark.parametrize(("value", "moved"), [(None, 0), ("0", 0), ("1", 1_000_000)])
def test_evaluation_and_default_seeds_follow_the_switch(value, moved):
    """A fresh process: unset or 0 gives the book's seeds exactly (EVAL_SEED 1234, defaults 0); 1 moves them all but
    the seed the shipped runs logged with."""
    env = {k: v for k, v in os.environ.items() if k != seeds.SEED_ENV}
    if value is not None:
        env[seeds.SEED_ENV] = value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout
    found = json.loads(out)
    assert found == {
        "eval": 1234 + moved,
        "shipped": 1234,
        "train": moved,
        "symbolic": moved,
        "sentences": moved,
        "onelayer": moved,
        "model": moved,
    }
