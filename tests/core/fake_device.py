"""A pretend accelerator: catch a cross-device mix (issue 37) on a machine without a GPU.

Inside :func:`pretend_accelerator`, ``torch.device("lazy")`` stands for the GPU. A tensor moved or created there
becomes a :class:`PretendTensor`: it says it lives on the accelerator but keeps its numbers in a real CPU tensor, so
every op computes the true result and the same code path runs as on a GPU. Before each op, :func:`_check` applies
the rules CUDA applies and raises :class:`DeviceMixError` where a GPU would raise:

- every tensor argument on one device, except 0-dim CPU tensors (CUDA kernels accept them as scalars);
- ``copy_`` and ``_to_copy`` may cross devices (``.to``, ``x[...] = cpu_values`` through a slice);
- indexing (``index``, ``index_put_``) accepts CPU indices into an accelerator tensor, not accelerator indices into a
  CPU tensor; the values put must be on the indexed tensor's device;
- a random op's ``generator`` must be on the device it draws on (a CPU generator cannot fill a CUDA tensor).

With ``mps=True`` it also refuses what Apple's MPS cannot do: float64 tensors on the device and SVD or
eigendecompositions there (DESIGN.md, "Devices and seeds").

Why not torch's ``FakeTensorMode``: on a CPU-only build it cannot run ``.to("cuda")``, ``copy_`` into a fake CUDA
tensor, or indexing with CPU indices ("PyTorch is not linked with support for cuda devices"), nor ``.item()``,
``.tolist()``, boolean masks or random initialisation; and it lets a CPU generator fill a CUDA tensor and CUDA
indices index a CPU tensor, both errors on a GPU. Nearly every function of ``lib`` does one of these. Here the
numbers are real, so all of that runs, and results can be compared with a plain CPU run. ``lazy`` (torch's lazy-tensor
device, unused otherwise) rather than ``cuda``: torch's C++ side needs a device guard for the device a tensor claims
(``copy_``, ``.to``), and a CPU-only build has one for ``lazy`` and none for ``cuda``; ``meta`` has one too, but
transformer_lens refuses to read weights on ``meta``. The rules are checked against ``FakeTensorMode`` where
both run (``tests/core/test_device_mix.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import torch
from torch.utils._python_dispatch import TorchDispatchMode, return_and_correct_aliasing
from torch.utils._pytree import tree_flatten, tree_map

DEVICE = torch.device("lazy")
"""The device that stands for the GPU inside :func:`pretend_accelerator`."""

aten = torch.ops.aten
CROSSING = {aten.copy_.default, aten._to_copy.default, aten._foreach_copy_.default}
INDEXING = {aten.index.Tensor, aten.index_put_.default, aten.index_put.default, aten._index_put_impl_.default}
DECOMPOSITIONS = {
    aten._linalg_svd.default,
    aten.linalg_svd.default,
    aten._linalg_eigh.default,
    aten.linalg_eig.default,
    aten._linalg_eigvals.default,
    aten.linalg_eigvals.default,
}


class DeviceMixError(RuntimeError):
    """An op mixed devices (or did what the pretended device cannot do) where a GPU would raise."""


class PretendTensor(torch.Tensor):
    """A tensor that claims to be on :data:`DEVICE` and holds its numbers in ``inner``, a CPU tensor."""

    inner: torch.Tensor

    @staticmethod
    def __new__(cls, inner: torch.Tensor) -> PretendTensor:
        # an inference tensor exactly when its numbers are one (a view of a normal tensor under inference_mode is not)
        with torch.inference_mode(inner.is_inference()):
            return torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
                cls,
                inner.shape,
                strides=inner.stride(),
                storage_offset=inner.storage_offset(),
                dtype=inner.dtype,
                layout=inner.layout,
                device=DEVICE,
                requires_grad=inner.requires_grad,
            )

    def __init__(self, inner: torch.Tensor) -> None:
        self.inner = inner

    def __repr__(self) -> str:  # type: ignore[override]
        return f"PretendTensor({self.inner!r})"

    def tolist(self) -> Any:
        # a GPU tensor's .tolist() is a (synchronising) copy to the host: allowed
        return self.inner.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError(f"can't convert {DEVICE} device type tensor to numpy. Use Tensor.cpu() first.")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.numpy()

    def __tensor_flatten__(self) -> tuple[list[str], None]:
        return ["inner"], None

    @staticmethod
    def __tensor_unflatten__(inner: dict[str, torch.Tensor], meta: None, size: Any, stride: Any) -> PretendTensor:
        return PretendTensor(inner["inner"])

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        # Reached only outside the mode (a PretendTensor kept past its block): the rules still hold.
        return _dispatch(func, args, kwargs or {}, mps=False)


def _is_cpu_scalar(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and t.dim() == 0


def _common_device(func: Any, tensors: list[torch.Tensor]) -> torch.device | None:
    """The one device of ``tensors`` apart from 0-dim CPU tensors (CUDA kernels take those as scalars), or raise."""
    devices = {t.device for t in tensors if not _is_cpu_scalar(t)}
    if len(devices) > 1 and func not in CROSSING:
        raise DeviceMixError(f"{func} mixes devices {' and '.join(sorted(map(str, devices)))}")
    if devices:
        return devices.pop()
    return torch.device("cpu") if tensors else None


def _check(func: Any, args: Any, kwargs: dict[str, Any], mps: bool) -> torch.device | None:
    """Raise :class:`DeviceMixError` where a GPU would refuse ``func(*args, **kwargs)``; return the output device."""
    if func in INDEXING:
        self, indices = args[0], [i for i in args[1] if i is not None]
        for index in indices:
            if index.device not in (self.device, torch.device("cpu")):
                raise DeviceMixError(f"{func}: indices on {index.device} into a tensor on {self.device}")
        values = [args[2]] if len(args) > 2 else []
        device = _common_device(func, [self, *values])
    else:
        flat, _ = tree_flatten((args, kwargs))
        device = _common_device(func, [t for t in flat if isinstance(t, torch.Tensor)])
    if func is aten.copy_.default or (func is aten._to_copy.default and "device" not in kwargs):
        device = args[0].device
    elif kwargs.get("device") is not None:
        device = torch.device(kwargs["device"])
    generator = kwargs.get("generator")
    if generator is not None and device is not None and generator.device.type != device.type:
        raise DeviceMixError(f"{func}: a generator on {generator.device} draws numbers for {device}")
    if mps and device is not None and device.type == DEVICE.type:
        if func in DECOMPOSITIONS:
            raise DeviceMixError(f"{func} is not implemented on mps")
        flat, _ = tree_flatten((args, kwargs))
        if kwargs.get("dtype") == torch.float64 or any(
            isinstance(t, torch.Tensor) and t.dtype == torch.float64 and t.device.type == DEVICE.type for t in flat
        ):
            raise DeviceMixError(f"{func}: mps has no float64")
    return device


def _to_copy_kwargs(args: Any, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The ``_to_copy`` that an ``aten.to`` call stands for (under ``inference_mode`` torch does not decompose ``to``):
    its ``device`` and ``dtype``, or ``None`` where it changes neither (``to`` then returns its input)."""
    self, rest = args[0], [*args[1:], *kwargs.values()]
    other = next((a for a in rest if isinstance(a, torch.Tensor)), None)  # x.to(other)
    device = other.device if other is not None else next((a for a in rest if isinstance(a, torch.device)), self.device)
    dtype = other.dtype if other is not None else next((a for a in rest if isinstance(a, torch.dtype)), self.dtype)
    return None if (device, dtype) == (self.device, self.dtype) else {"device": device, "dtype": dtype}


def _dispatch(func: Any, args: Any, kwargs: dict[str, Any], mps: bool) -> Any:
    if func.overloadpacket is aten.to:
        copy = _to_copy_kwargs(args, kwargs)
        return args[0] if copy is None else _dispatch(aten._to_copy.default, (args[0],), copy, mps)
    if func is aten._has_compatible_shallow_copy_type.default:
        # Module.to under inference_mode asks whether `param.data = moved` may be set: a query, allowed across devices
        # on a GPU; a PretendTensor cannot be a plain tensor's data, so the module makes a new parameter instead
        return isinstance(args[0], PretendTensor) == isinstance(args[1], PretendTensor)
    device = _check(func, args, kwargs, mps)
    real_kwargs = {**kwargs, "device": torch.device("cpu")} if kwargs.get("device") is not None else kwargs

    def unwrap(x: Any) -> Any:
        return x.inner if isinstance(x, PretendTensor) else x

    out = func(*tree_map(unwrap, args), **tree_map(unwrap, real_kwargs))
    if device is None or device.type != DEVICE.type:
        return out
    wrapped = tree_map(lambda x: PretendTensor(x) if isinstance(x, torch.Tensor) else x, out)
    if func is aten._to_copy.default:
        return wrapped
    return return_and_correct_aliasing(func, args, kwargs, wrapped)


class _PretendMode(TorchDispatchMode):
    def __init__(self, mps: bool) -> None:
        super().__init__()
        self.mps = mps

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return _dispatch(func, args, kwargs or {}, self.mps)


@contextmanager
def pretend_accelerator(mps: bool = False) -> Iterator[torch.device]:
    """Within the block, :data:`DEVICE` (yielded) behaves as a GPU: a cross-device op raises
    :class:`DeviceMixError`; ``lib.core.device`` lists it as available, so ``device=`` arguments accept it."""
    from lib.core import device as lib_device

    available = lib_device.available_devices
    # torch.tensor(data, device=...) builds on the CPU and then moves through the mode, as under FakeTensorMode
    lift_cpu_only = torch._C._only_lift_cpu_tensors()
    torch._C._set_only_lift_cpu_tensors(True)
    try:
        with (
            mock.patch.object(lib_device, "available_devices", lambda: [DEVICE.type, *available()]),
            _PretendMode(mps),
        ):
            yield DEVICE
    finally:
        torch._C._set_only_lift_cpu_tensors(lift_cpu_only)


def draw(*shape: int, high: int | None = None, seed: int = 0) -> torch.Tensor:
    """CPU numbers from a CPU generator (the book's convention): integers in ``[0, high)``, else standard normal."""
    g = torch.Generator().manual_seed(seed)
    if high is None:
        return torch.randn(shape, generator=g)
    return torch.randint(0, high, shape, generator=g)


def real(x: Any) -> Any:
    """``x`` (a tensor, or a structure of them) with every :class:`PretendTensor` replaced by its CPU numbers."""
    return tree_map(lambda t: t.inner.detach() if isinstance(t, PretendTensor) else t, x)


def on_device(x: Any, device: torch.device = DEVICE) -> Any:
    """Move every tensor of ``x`` (a tensor, or a structure of them) to ``device``; call inside the block."""
    return tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, x)
