"""The case generator and tensor construction of the seeded fuzz tests (test_fuzz.py, whose docstring
describes the method): seeded cases over shapes, layouts, dtypes and ops, each rebuilding exactly the
same tensors from its own seed, and build(), which returns a case's call and its float64 reference."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

DTYPES = (torch.bfloat16, torch.float16)
LAYOUTS = ("row", "col", "slice", "offset", "expand")
OPS = ("gemm", "addmm", "linear")
SELF_KINDS = ("0d", "1d", "1xN", "Mx1", "MxN")

TILE_EDGES = (63, 64, 65, 127, 128, 129, 255, 256, 257)
PRIMES = (7, 13, 31, 127, 251, 509, 1021, 2039, 4093)

# Dyadic scalars (few significant bits): exactly representable in fp32 and products with
# bf16/fp16/fp32 values round once, so the K == 0 outputs can be compared bit for bit.
NICE_SCALARS = (1.0, -1.0, 0.5, 2.0, -0.75, 1.25, 0.0625)


def _dt(d):
    return "None" if d is None else str(d).replace("torch.", "").replace("bfloat16", "bf16").replace(
        "float16", "fp16").replace("float32", "fp32")


# ============================================================================ case generator


@dataclasses.dataclass
class Case:
    idx: int
    seed: int
    op: str
    M: int
    N: int
    K: int
    dtype: torch.dtype
    out_dtype: torch.dtype | None
    la: str                      # layout of a / mat1 / input (M, K)
    lb: str                      # layout of b / mat2 (K, N); for linear: weight (N, K)
    alpha: float = 1.0
    beta: float = 1.0
    self_kind: str | None = None  # addmm: 0d / 1d / 1xN / Mx1 / MxN; linear: "bias" or None
    self_layout: str = "row"
    self_fp32: bool = False       # addmm with out_dtype=float32: self given in float32
    self_nan: bool = False        # beta == 0: self filled with NaN (must be ignored)
    batch: int | None = None      # linear: input viewed as (batch, M // batch, K)
    sub_a: int = 0                # variant bits for slice/expand layouts
    sub_b: int = 0
    sub_s: int = 0

    @property
    def out_t(self):
        return self.out_dtype or self.dtype

    @property
    def empty(self):
        return self.M == 0 or self.N == 0

    @property
    def runs_kernel(self):
        return self.M > 0 and self.N > 0 and self.K > 0

    def category(self):
        return (self.op, _dt(self.dtype), _dt(self.out_dtype), self.la, self.lb)

    def describe(self):
        s = (f"#{self.idx} seed={self.seed} {self.op} M={self.M} N={self.N} K={self.K} {_dt(self.dtype)}"
             f" out={_dt(self.out_dtype)} a={self.la}{self.sub_a} b={self.lb}{self.sub_b}")
        if self.op == "addmm":
            s += (f" alpha={self.alpha} beta={self.beta} self={self.self_kind}/{self.self_layout}{self.sub_s}"
                  f"{'/fp32' if self.self_fp32 else ''}{'/NaN' if self.self_nan else ''}")
        if self.op == "linear":
            s += f" bias={self.self_kind == 'bias'} batch={self.batch}"
        return s


def _draw_dim(rng, max_dim):
    """One dimension from a mixture biased towards edge values."""
    r = rng.random()
    if r < 0.05:
        return 0
    if r < 0.13:
        return 1
    if r < 0.33:
        pool = [d for d in TILE_EDGES if d <= max_dim]
        return int(rng.choice(pool)) if pool else int(rng.integers(0, max_dim + 1))
    if r < 0.53:
        pool = [d for d in PRIMES if d <= max_dim]
        return int(rng.choice(pool)) if pool else int(rng.integers(0, max_dim + 1))
    if r < 0.70:
        return int(rng.integers(2, min(32, max_dim) + 1))
    return int(rng.integers(1, max_dim + 1))


def _scalar(rng, allow_zero):
    r = rng.random()
    if allow_zero and r < 0.2:
        return 0.0
    if r < 0.6:
        return float(rng.choice(NICE_SCALARS))
    k = int(rng.integers(-40, 41))
    return k / 16.0 if k != 0 else 1.0


def make_cases(n, seed, max_dim, max_work):
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        M, N, K = (_draw_dim(rng, max_dim) for _ in range(3))
        dims = [M, N, K]
        while dims[0] * dims[1] * dims[2] > max_work:  # cap the work: shrink the largest dim
            j = int(np.argmax(dims))
            others = max(1, math.prod(dims) // dims[j])
            dims[j] = max(1, min(dims[j] - 1, max_work // others))
        M, N, K = dims
        op = OPS[int(rng.integers(0, len(OPS)))]
        dtype = DTYPES[int(rng.integers(0, 2))]
        out_dtype = None if (op == "linear" or rng.random() < 0.5) else torch.float32
        c = Case(idx=i, seed=int(seed * 100_003 + i), op=op, M=M, N=N, K=K, dtype=dtype, out_dtype=out_dtype,
                 la=LAYOUTS[int(rng.integers(0, 5))], lb=LAYOUTS[int(rng.integers(0, 5))],
                 sub_a=int(rng.integers(0, 2)), sub_b=int(rng.integers(0, 2)), sub_s=int(rng.integers(0, 2)))
        if (out_dtype is not None and c.la == "expand" and c.sub_a == 1 and c.lb == "expand"
                and c.sub_b == 0):
            # Both operands constant along K make every output a K-term sum of one same-signed
            # value; tensor cores truncate (round toward zero) inside the fp32 accumulation, a
            # bias of up to ~K/8 * 2^-24 relative (~2e-5 at K = 5000) that the fp32-out tolerance
            # (meant for random-sign sums) does not allow for. Vary b along K instead.
            c.sub_b = 1
        if op == "addmm":
            c.alpha = _scalar(rng, allow_zero=rng.random() < 0.1)
            c.beta = _scalar(rng, allow_zero=True)
            c.self_kind = SELF_KINDS[int(rng.integers(0, len(SELF_KINDS)))]
            c.self_layout = LAYOUTS[int(rng.integers(0, 5))] if c.self_kind == "MxN" else (
                ("row", "slice", "offset")[int(rng.integers(0, 3))] if c.self_kind == "1d" else "row")
            c.self_fp32 = out_dtype is not None and rng.random() < 0.5
            c.self_nan = c.beta == 0 and rng.random() < 0.5
        elif op == "linear":
            c.self_kind = "bias" if rng.random() < 0.6 else None
            c.self_layout = ("row", "slice", "offset")[int(rng.integers(0, 3))]
            b = int(rng.choice([2, 3, 4, 8]))
            c.batch = b if (rng.random() < 0.5 and M % b == 0) else None
        cases.append(c)
    return cases


# ============================================================================ tensors


def _randn(shape, gen, device):
    return torch.randn(shape, generator=gen, device=device, dtype=torch.float32)


def make_operand(R, C, layout, dtype, gen, device, scale=1.0, sub=0, fill=None):
    """A (R, C) tensor of dtype with the requested memory layout (values randn * scale, or all
    `fill`). The storage is created first and then viewed, so the layout is what it says."""

    def base(*shape):
        t = (_randn(shape, gen, device) * scale).to(dtype)
        return t.fill_(fill) if fill is not None else t

    if layout == "row":
        x = base(R, C)
    elif layout == "col":  # column-major: transpose of a contiguous (C, R)
        x = base(C, R).t()
    elif layout == "slice":  # step 2 along columns or along rows of a bigger tensor
        x = base(R, 2 * C)[:, ::2] if sub == 0 else base(2 * R, C)[::2]
    elif layout == "offset":  # row-major, data pointer one element past an aligned base
        x = base(R * C + 1).view(-1)[1:1 + R * C].view(R, C)
    elif layout == "expand":  # stride 0 along rows (sub 0) or along columns (sub 1)
        x = base(1, C).expand(R, C) if sub == 0 else base(R, 1).expand(R, C)
    else:
        raise ValueError(layout)
    assert tuple(x.shape) == (R, C)
    return x


def make_vector(n, layout, dtype, gen, device, fill=None):
    if layout == "slice":
        x = _randn((2 * n,), gen, device).to(dtype)[::2]
    elif layout == "offset":
        x = _randn((n + 1,), gen, device).to(dtype)[1:]
    else:
        x = _randn((n,), gen, device).to(dtype)
    return x.fill_(fill) if fill is not None else x


def _abs_mm(x, y):
    """|x| @ |y| (elementwise bound material). On CUDA in the input dtype on the tensor cores
    (cheap; positive terms, so its own rounding is a small relative error, covered by the
    1.1 factor in check_elementwise); on the CPU in float32."""
    if x.is_cuda:
        return (x.abs() @ y.abs()).float()
    return x.float().abs() @ y.float().abs()


def build(case, device):
    """(call, ref_fn, abs_fn, out_shape) for a case; all tensors on device.

    ref_fn() is the float64 result of the same inputs; abs_fn() is
    |alpha| |a| @ |b| + |beta| |self| (float32), the scale of the rounding errors."""
    gen = torch.Generator(device=device)
    gen.manual_seed(case.seed)
    M, N, K, dt = case.M, case.N, case.K, case.dtype
    scale = K ** -0.25 if K > 0 else 1.0  # keeps |out| = O(1..100): no fp16 overflow, even for expand x expand
    a = make_operand(M, K, case.la, dt, gen, device, scale, case.sub_a)
    if case.op == "linear":
        w = make_operand(N, K, case.lb, dt, gen, device, scale, case.sub_b)
        bias = make_vector(N, case.self_layout, dt, gen, device) if case.self_kind == "bias" else None
        x = a
        if case.batch is not None:
            try:
                x = a.view(case.batch, M // case.batch, K)
            except RuntimeError:
                x = a.reshape(case.batch, M // case.batch, K)
        out_shape = (*x.shape[:-1], N)

        def call():
            return torch.ops.tk.linear(x, w, bias)

        def ref():
            r = a.double() @ w.double().t()
            if bias is not None:
                r = r + bias.double()
            return r.reshape(out_shape)

        def absb():
            r = _abs_mm(a, w.t())
            if bias is not None:
                r = r + bias.float().abs()
            return r.reshape(out_shape)

        return call, ref, absb, out_shape

    b = make_operand(K, N, case.lb, dt, gen, device, scale, case.sub_b)
    if case.op == "gemm":
        def call():
            return torch.ops.tk.gemm(a, b, out_dtype=case.out_dtype)

        def ref():
            return a.double() @ b.double()

        def absb():
            return _abs_mm(a, b)

        return call, ref, absb, (M, N)

    sdt = torch.float32 if case.self_fp32 else dt
    fill = math.nan if case.self_nan else None
    kind = case.self_kind
    if kind == "0d":
        s = _randn((), gen, device).to(sdt)
    elif kind == "1d":
        s = make_vector(N, case.self_layout, sdt, gen, device)
    elif kind == "1xN":
        s = _randn((1, N), gen, device).to(sdt)
    elif kind == "Mx1":
        s = _randn((M, 1), gen, device).to(sdt)
    else:
        s = make_operand(M, N, case.self_layout, sdt, gen, device, 1.0, case.sub_s, fill=fill)
    if fill is not None and kind != "MxN":
        s.fill_(fill)
    alpha, beta = case.alpha, case.beta

    def call():
        return torch.ops.tk.addmm(s, a, b, beta=beta, alpha=alpha, out_dtype=case.out_dtype)

    def ref():
        r = alpha * (a.double() @ b.double())
        if beta != 0:  # beta == 0: self is ignored (a NaN self must not propagate)
            r = r + beta * s.double()
        return r

    def absb():
        r = abs(alpha) * _abs_mm(a, b)
        if beta != 0:
            r = r + abs(beta) * s.float().abs()
        return r

    return call, ref, absb, (M, N)
