import random

import numpy as np
import pytest
import torch

from lib.core import device


def test_auto_picks_best_available(monkeypatch):
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    assert device.pick_device().type == device.available_devices()[0]
    assert device.pick_device("auto").type == device.available_devices()[0]


def test_auto_takes_mps_only_when_asked(monkeypatch):
    """A Mac: auto stays on the CPU; mps by name or CIRCUITS_DEVICE=mps. With CUDA there too, auto takes CUDA."""
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    monkeypatch.setattr(device, "available_devices", lambda: ["mps", "cpu"])
    assert device.pick_device() == torch.device("cpu")
    assert device.pick_device("mps") == torch.device("mps")
    monkeypatch.setenv(device.DEVICE_ENV, "mps")
    assert device.pick_device() == torch.device("mps")
    monkeypatch.setattr(device, "available_devices", lambda: ["cuda", "mps", "cpu"])
    assert device.pick_device("auto") == torch.device("cuda")


def test_cpu_always_available():
    assert device.pick_device("CPU") == torch.device("cpu")


def test_environment_override(monkeypatch):
    monkeypatch.setenv(device.DEVICE_ENV, "cpu")
    assert device.pick_device() == torch.device("cpu")


def test_cuda_preferred_when_available(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert device.available_devices()[0] == "cuda"
    assert device.pick_device("auto").type == "cuda"


@pytest.mark.parametrize("name", ["gpu", "tpu", "", "cuda:x"])
def test_unknown_name_is_a_value_error(name):
    with pytest.raises(ValueError, match="allowed: auto, cuda, mps, cpu"):
        device.pick_device(name)


def test_unknown_name_from_environment(monkeypatch):
    monkeypatch.setenv(device.DEVICE_ENV, "gpu")
    with pytest.raises(ValueError, match="CIRCUITS_DEVICE"):
        device.pick_device()


def test_unavailable_kind_is_a_value_error(monkeypatch):
    monkeypatch.setattr(device, "available_devices", lambda: ["cpu"])
    with pytest.raises(ValueError, match="not available.*available: cpu"):
        device.pick_device("cuda")


def test_seed_everything_is_reproducible():
    g = device.seed_everything(123)
    a = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=g).item())
    g = device.seed_everything(123)
    b = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=g).item())
    assert a == b
    device.seed_everything(124)
    assert torch.rand(1).item() != a[2]


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True, 2**63])
def test_bad_seed(seed):
    with pytest.raises(ValueError, match="seed must be an integer"):
        device.seed_everything(seed)


def test_seed_checks_agree_across_modules():
    """device.seed_everything and the OCR task builders reject a bad seed with the same message."""
    from lib.ocr import split

    for bad in (-1, 2**63, 0.5, True):
        with pytest.raises(ValueError) as from_device:
            device.seed_everything(bad)
        with pytest.raises(ValueError) as from_ocr:
            split.fictitious_names(1, seed=bad)
        assert str(from_device.value) == str(from_ocr.value)


def test_known_devices_are_the_literal_values():
    assert device.KNOWN_DEVICES == ("auto", "cuda", "mps", "cpu")


def test_check_device_passes_none_and_known_devices():
    assert device.check_device(None) is None
    assert device.check_device("cpu") == torch.device("cpu")
    assert device.check_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.parametrize("name", ["gpu", "cuda:x", ""])
def test_check_device_unknown_name(name):
    with pytest.raises(ValueError, match="unknown device"):
        device.check_device(name)


def test_check_device_unavailable_kind(monkeypatch):
    monkeypatch.setattr(device, "available_devices", lambda: ["cpu"])
    with pytest.raises(ValueError, match="'cuda' is not available on this machine; available: cpu"):
        device.check_device("cuda")


def test_public_constructors_reject_bad_device_names():
    """The device arguments of lib's model and generator constructors go through check_device."""
    from lib.induction import models, sequences
    from lib.ocr import lm

    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        models.make_model(sequences.InductionConfig(n_layers=1), seed=0, device="gpu")
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        sequences.repeated_sequences(2, sequences.seeded_generator(0), device="gpu")
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        lm.tiny_gpt2(lm.word_tokenizer(["a b c"]), device="gpu")


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.fixture
def no_thread_env(monkeypatch):
    for name in device.THREAD_ENVS:
        monkeypatch.delenv(name, raising=False)


def test_configure_threads_sets_the_book_count_over_torch_default(restore_threads, no_thread_env, monkeypatch):
    monkeypatch.setattr(device, "_default_threads", lambda: 8)
    torch.set_num_threads(8)  # what torch starts with on an 8-CPU machine
    assert device.configure_threads() == device.BOOK_THREADS == torch.get_num_threads() == 1
    torch.set_num_threads(8)
    assert device.configure_threads(2) == torch.get_num_threads() == 2


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "MKL_NUM_THREADS"])
def test_configure_threads_respects_the_environment(restore_threads, no_thread_env, monkeypatch, name):
    monkeypatch.setenv(name, "3")
    monkeypatch.setattr(device, "_default_threads", lambda: 3)
    torch.set_num_threads(3)
    assert device.configure_threads() == torch.get_num_threads() == 3


def test_configure_threads_respects_an_earlier_set_num_threads(restore_threads, no_thread_env, monkeypatch):
    monkeypatch.setattr(device, "_default_threads", lambda: 8)
    torch.set_num_threads(3)  # the user's choice, before `import lib`
    assert device.configure_threads() == torch.get_num_threads() == 3


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2"])
def test_configure_threads_rejects_bad_counts(threads):
    with pytest.raises(ValueError, match="threads"):
        device.configure_threads(threads)


def test_import_lib_applies_the_thread_choice_once():
    """A fresh interpreter without OMP_NUM_THREADS: torch starts at one thread per CPU, `import lib` sets 1;
    with OMP_NUM_THREADS=2 it keeps 2."""
    import os
    import subprocess
    import sys

    code = "import torch; import lib; print(torch.get_num_threads())"
    env = {k: v for k, v in os.environ.items() if k not in device.THREAD_ENVS}
    plain = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert plain.stdout.strip() == str(device.BOOK_THREADS)
    chosen = subprocess.run(
        [sys.executable, "-c", code], env={**env, "OMP_NUM_THREADS": "2"}, capture_output=True, text=True, check=True
    )
    assert chosen.stdout.strip() == "2"


def test_to_device_moves_every_tensor_of_a_batch_and_keeps_its_shape():
    """Tensors, tuples (named too), lists and dicts, nested; other values untouched; no copy where it is already."""
    from lib.induction.mixed import MixedBatch

    t = torch.arange(3)
    batch = {"a": [t, (t, 1.5)], "b": MixedBatch(t, t > 0, t < 2), "c": "text"}
    moved = device.to_device(batch, torch.device("meta"))
    assert moved["a"][0].device.type == "meta" and moved["a"][1][0].device.type == "meta"
    assert moved["a"][1][1] == 1.5 and moved["c"] == "text"
    assert isinstance(moved["b"], MixedBatch) and moved["b"].repeated.device.type == "meta"
    assert isinstance(moved["a"][1], tuple) and isinstance(moved["a"], list)
    assert device.to_device(t, "cpu") is t


def test_assert_same_is_exact_on_the_cpu():
    a = torch.tensor([1.0, 2.0])
    device.assert_same(a, a.clone(), "same")
    with pytest.raises(AssertionError, match=r"different \(not bit for bit on the CPU; largest difference 2.38"):
        device.assert_same(a, torch.nextafter(a, a + 1), "different")  # one float32 step apart (2.4e-7 at 2)


def test_clock_on_the_cpu_is_perf_counter_after_a_no_op_sync():
    before = device.clock("cpu")
    assert device.clock(torch.device("cpu")) >= before
    device.synchronize("cpu")  # nothing queued: returns at once


def test_random_data_is_drawn_on_the_cpu_and_moved(monkeypatch):
    """Every device sees the CPU's numbers: the generators are CPU generators, the results moved where asked."""
    from lib.core.tokens import EVAL_SEED
    from lib.induction import mixed, sequences

    assert sequences.seeded_generator(3).device.type == "cpu"
    # a device other than the CPU, without a GPU: meta tensors (shapes only) stand for it
    monkeypatch.setattr(device, "available_devices", lambda: ["cpu", "meta"])
    tokens, period = sequences.repeated_sequences(4, sequences.seeded_generator(3), device="meta")
    assert tokens.device.type == period.device.type == "meta"
    sets = sequences.eval_sets(device="meta", n=4)
    assert all(t.device.type == "meta" for t in sets)
    data = mixed.eval_batch(device="meta", n=4)
    assert all(t.device.type == "meta" for t in data)
    on_cpu = sequences.eval_sets(n=4)
    again = sequences.repeated_sequences(4, sequences.seeded_generator(EVAL_SEED))[0]
    assert torch.equal(on_cpu.tokens, again)


def test_every_torch_load_maps_to_the_cpu():
    """A file saved from a GPU would otherwise load onto a GPU, which a laptop or a CPU runtime does not have."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    calls = [
        (path.relative_to(root), call)
        for folder in ("lib", "bench", "scripts")
        for path in (root / folder).rglob("*.py")
        for call in re.findall(r"torch\.load\([^)]*\)", path.read_text())
    ]
    assert calls, "no torch.load found: the pattern is stale"
    assert [c for c in calls if 'map_location="cpu"' not in c[1]] == []
