"""CPU tests of torch.ops.tk.{gemm,addmm,linear}'s argument errors: the exception type and a message
naming the argument, on CPU, meta and fake tensors and through the Python wrappers; device mismatches."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_tk
from conftest import names_argument
from ops_helpers import OPS


# ============================================================================ errors

# Each case: id -> (op name, builder(dev) -> (args, kwargs), exception type, argument names
# of which the message must mention one). Builders create float32 data unless the case
# is about dtypes.


def _r(*shape, dtype=torch.float32, dev="cpu"):
    return torch.randn(shape, dtype=torch.float32).to(dtype=dtype, device=dev)


ERROR_CASES = {
    # ---- gemm
    "gemm_a_1d": ("gemm", lambda d: ((_r(4, dev=d), _r(4, 3, dev=d)), {}), ValueError, ("a",)),
    "gemm_a_3d": ("gemm", lambda d: ((_r(2, 4, 5, dev=d), _r(5, 3, dev=d)), {}), ValueError, ("a",)),
    "gemm_b_1d": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, dev=d)), {}), ValueError, ("b",)),
    "gemm_b_0d": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(dev=d)), {}), ValueError, ("b",)),
    "gemm_inner": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(6, 3, dev=d)), {}), ValueError, ("a", "b")),
    "gemm_dtype_mismatch": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, 3, dtype=torch.float64, dev=d)), {}),
                            TypeError, ("a", "b")),
    "gemm_dtype_mismatch_lowp": ("gemm", lambda d: ((_r(4, 5, dtype=torch.bfloat16, dev=d),
                                                    _r(5, 3, dtype=torch.float16, dev=d)), {}),
                                 TypeError, ("a", "b")),
    "gemm_int": ("gemm", lambda d: ((torch.ones(4, 5, dtype=torch.int32, device=d),
                                     torch.ones(5, 3, dtype=torch.int32, device=d)), {}), TypeError, ("a", "b")),
    "gemm_complex": ("gemm", lambda d: ((_r(4, 5, dev=d).to(torch.complex64),
                                         _r(5, 3, dev=d).to(torch.complex64)), {}), TypeError, ("a", "b")),
    "gemm_outdtype_fp16_for_bf16": ("gemm", lambda d: ((_r(4, 5, dtype=torch.bfloat16, dev=d),
                                                        _r(5, 3, dtype=torch.bfloat16, dev=d)),
                                                       {"out_dtype": torch.float16}), TypeError, ("out_dtype",)),
    "gemm_outdtype_fp64_for_bf16": ("gemm", lambda d: ((_r(4, 5, dtype=torch.bfloat16, dev=d),
                                                        _r(5, 3, dtype=torch.bfloat16, dev=d)),
                                                       {"out_dtype": torch.float64}), TypeError, ("out_dtype",)),
    "gemm_outdtype_bf16_for_fp32": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, 3, dev=d)),
                                                       {"out_dtype": torch.bfloat16}), TypeError, ("out_dtype",)),
    "gemm_outdtype_fp64_for_fp32": ("gemm", lambda d: ((_r(4, 5, dev=d), _r(5, 3, dev=d)),
                                                       {"out_dtype": torch.float64}), TypeError, ("out_dtype",)),
    "gemm_outdtype_fp32_for_fp64": ("gemm", lambda d: ((_r(4, 5, dtype=torch.float64, dev=d),
                                                        _r(5, 3, dtype=torch.float64, dev=d)),
                                                       {"out_dtype": torch.float32}), TypeError, ("out_dtype",)),
    "gemm_outdtype_int": ("gemm", lambda d: ((_r(4, 5, dtype=torch.float16, dev=d),
                                              _r(5, 3, dtype=torch.float16, dev=d)),
                                             {"out_dtype": torch.int32}), TypeError, ("out_dtype",)),
    # ---- addmm
    "addmm_self_3d": ("addmm", lambda d: ((_r(1, 4, 3, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                      ValueError, ("self",)),
    "addmm_self_rows": ("addmm", lambda d: ((_r(5, 3, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                        ValueError, ("self",)),
    "addmm_self_cols": ("addmm", lambda d: ((_r(4, 2, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                        ValueError, ("self",)),
    "addmm_self_vec": ("addmm", lambda d: ((_r(4, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)), {}),
                       ValueError, ("self",)),
    "addmm_self_vec_beta0": ("addmm", lambda d: ((_r(4, dev=d), _r(4, 5, dev=d), _r(5, 3, dev=d)),
                                                 {"beta": 0}), ValueError, ("self",)),
    "addmm_mat1_1d": ("addmm", lambda d: ((_r(3, dev=d), _r(5, dev=d), _r(5, 3, dev=d)), {}),
                      ValueError, ("mat1",)),
    "addmm_mat2_3d": ("addmm", lambda d: ((_r(3, dev=d), _r(4, 5, dev=d), _r(1, 5, 3, dev=d)), {}),
                      ValueError, ("mat2",)),
    "addmm_inner": ("addmm", lambda d: ((_r(3, dev=d), _r(4, 5, dev=d), _r(6, 3, dev=d)), {}),
                    ValueError, ("mat1", "mat2")),
    "addmm_mat_dtype": ("addmm", lambda d: ((_r(3, dev=d), _r(4, 5, dev=d), _r(5, 3, dtype=torch.float64, dev=d)),
                                            {}), TypeError, ("mat1", "mat2")),
    "addmm_self_dtype_fp64": ("addmm", lambda d: ((_r(3, dtype=torch.float64, dev=d), _r(4, 5, dev=d),
                                                   _r(5, 3, dev=d)), {}), TypeError, ("self",)),
    "addmm_self_dtype_fp16_for_bf16": ("addmm", lambda d: ((_r(4, 3, dtype=torch.float16, dev=d),
                                                            _r(4, 5, dtype=torch.bfloat16, dev=d),
                                                            _r(5, 3, dtype=torch.bfloat16, dev=d)), {}),
                                       TypeError, ("self",)),
    "addmm_self_fp32_without_out_dtype": ("addmm", lambda d: ((_r(4, 3, dtype=torch.float32, dev=d),
                                                               _r(4, 5, dtype=torch.bfloat16, dev=d),
                                                               _r(5, 3, dtype=torch.bfloat16, dev=d)), {}),
                                          TypeError, ("self",)),
    "addmm_self_int": ("addmm", lambda d: ((torch.ones(3, dtype=torch.int64, device=d), _r(4, 5, dev=d),
                                            _r(5, 3, dev=d)), {}), TypeError, ("self",)),
    "addmm_bad_out_dtype": ("addmm", lambda d: ((_r(3, dtype=torch.float16, dev=d),
                                                 _r(4, 5, dtype=torch.float16, dev=d),
                                                 _r(5, 3, dtype=torch.float16, dev=d)),
                                                {"out_dtype": torch.bfloat16}), TypeError, ("out_dtype",)),
    "addmm_int_mats": ("addmm", lambda d: ((torch.ones(3, dtype=torch.int32, device=d),
                                            torch.ones(4, 5, dtype=torch.int32, device=d),
                                            torch.ones(5, 3, dtype=torch.int32, device=d)), {}),
                       TypeError, ("self", "mat1", "mat2")),
    # ---- linear
    "linear_input_0d": ("linear", lambda d: ((_r(dev=d), _r(3, 1, dev=d), None), {}), ValueError, ("input",)),
    "linear_weight_1d": ("linear", lambda d: ((_r(2, 5, dev=d), _r(5, dev=d), None), {}), ValueError, ("weight",)),
    "linear_weight_3d": ("linear", lambda d: ((_r(2, 5, dev=d), _r(1, 3, 5, dev=d), None), {}),
                         ValueError, ("weight",)),
    "linear_inner": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 6, dev=d), None), {}),
                     ValueError, ("input", "weight")),
    "linear_inner_3d": ("linear", lambda d: ((_r(2, 4, 5, dev=d), _r(3, 4, dev=d), _r(3, dev=d)), {}),
                        ValueError, ("input", "weight")),
    "linear_bias_len": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 5, dev=d), _r(4, dev=d)), {}),
                        ValueError, ("bias",)),
    "linear_bias_2d": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 5, dev=d), _r(2, 3, dev=d)), {}),
                       ValueError, ("bias",)),
    "linear_weight_dtype": ("linear", lambda d: ((_r(2, 5, dev=d), _r(3, 5, dtype=torch.float64, dev=d), None),
                                                 {}), TypeError, ("input", "weight")),
    "linear_bias_dtype": ("linear", lambda d: ((_r(2, 5, dtype=torch.bfloat16, dev=d),
                                                _r(3, 5, dtype=torch.bfloat16, dev=d),
                                                _r(3, dtype=torch.float16, dev=d)), {}), TypeError, ("bias",)),
    "linear_int": ("linear", lambda d: ((torch.ones(2, 5, dtype=torch.int64, device=d),
                                         torch.ones(3, 5, dtype=torch.int64, device=d), None), {}),
                   TypeError, ("input", "weight")),
}


def _raise_check(case_id, make_args, mode):
    op_name, build, exc, names = ERROR_CASES[case_id]
    op = OPS[op_name]
    if mode == "cpu":
        args, kwargs = build("cpu")
        ctx = contextlib.nullcontext()
    elif mode == "meta":
        args, kwargs = build("meta")
        ctx = contextlib.nullcontext()
    elif mode == "fake":
        fm = FakeTensorMode()
        args, kwargs = build("cpu")
        args = tuple(fm.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args)
        ctx = fm
    else:
        raise AssertionError(mode)
    with ctx:
        with pytest.raises(exc) as ei:
            make_args(op, args, kwargs)
    msg = str(ei.value)
    assert names_argument(msg, names), f"message {msg!r} names none of {names}"
    return msg


@pytest.mark.parametrize("mode", ["cpu", "meta", "fake"])
@pytest.mark.parametrize("case_id", list(ERROR_CASES))
def test_errors(case_id, mode):
    _raise_check(case_id, lambda op, a, k: op(*a, **k), mode)


@pytest.mark.parametrize("case_id", [c for c in ERROR_CASES if not c.startswith("linear")][::3])
def test_errors_through_python_wrappers(case_id):
    op_name = ERROR_CASES[case_id][0]
    wrapper = getattr(torch_tk, op_name)
    _raise_check(case_id, lambda op, a, k: wrapper(*a, **k), "cpu")


DEVICE_CASES = {
    "gemm_b": ("gemm", lambda t, o: ((t(4, 5), o(5, 3)), {})),
    "gemm_a": ("gemm", lambda t, o: ((o(4, 5), t(5, 3)), {})),
    "addmm_self": ("addmm", lambda t, o: ((o(3), t(4, 5), t(5, 3)), {})),
    "addmm_mat2": ("addmm", lambda t, o: ((t(3), t(4, 5), o(5, 3)), {})),
    "linear_weight": ("linear", lambda t, o: ((t(2, 5), o(3, 5), None), {})),
    "linear_bias": ("linear", lambda t, o: ((t(2, 5), t(3, 5), o(3)), {})),
}


@pytest.mark.parametrize("case_id", list(DEVICE_CASES))
def test_device_mismatch_cpu_meta(case_id):
    op_name, build = DEVICE_CASES[case_id]
    args, kwargs = build(lambda *s: torch.randn(*s), lambda *s: torch.randn(*s, device="meta"))
    with pytest.raises(ValueError):
        OPS[op_name](*args, **kwargs)


@pytest.mark.parametrize("case_id", list(DEVICE_CASES))
def test_device_mismatch_fake_cuda(case_id):
    # FakeTensorMode can create "cuda" fake tensors without a GPU.
    op_name, build = DEVICE_CASES[case_id]
    with FakeTensorMode():
        args, kwargs = build(lambda *s: torch.randn(*s), lambda *s: torch.randn(*s, device="cuda"))
        with pytest.raises(ValueError):
            OPS[op_name](*args, **kwargs)
