"""DTensor sharding rules for tk::gemm, tk::addmm, tk::linear, tk::gemm_pair and tk::linear_backward (tensor
parallelism).

Importing this module (``import torch_tk`` does) registers, through
``torch.distributed.tensor.experimental.register_sharding``, the placements under which each tk op
runs on the local shards of DTensor inputs, so that the tk kernel runs per rank instead of DTensor
raising for an op it does not know. Per mesh dimension (expanded to every mesh dimension by DTensor):

==============================  ===========================  ===============================
op                              inputs                       output
==============================  ===========================  ===============================
gemm(a, b)                      R, R                         R
                                S(0), R                      S(0)       (rows of a)
                                R, S(1)                      S(1)       (columns of b)
                                S(1), S(0)                   Partial    (contraction dim)
addmm(self, mat1, mat2)         as gemm; ``self`` follows the output: R for R / broadcast dims,
                                S(d) where ``self`` spans the sharded output dim, Partial (sum)
                                for Partial outputs (each rank adds beta*self_r; the sum is
                                beta*self once DTensor partitions a replicated ``self``)
linear(input, weight, bias)     R, R, R                      R
                                S(d), R, R   (d < ndim-1)    S(d)       (batch / leading dims)
                                R, S(0), S(0)                S(ndim-1)  (column parallel)
                                S(ndim-1), S(1), Partial     Partial    (row parallel)
gemm_pair(a0, b0, a1, b1)       each product as gemm, in every combination (backward's dX, dW)
linear_backward(g, w, x)        R, R, R                      R, R
 -> (g w, g^T x)                S(0), R, S(0)                S(0), Partial  (rows / tokens)
                                S(1), S(0), R                Partial, S(0)  (column parallel)
                                R, S(1), S(1)                S(1), S(1)     (row parallel)
==============================  ===========================  ===============================

A replicated bias is never added on every rank of a Partial output: the rule asks for a Partial
bias, which DTensor makes from a replicated one locally (no communication), exactly as it does
for stock ``aten.addmm``. So ColwiseParallel/RowwiseParallel over a patched MLP communicate the
same as over stock nn.Linear (checked in test/test_distributed_cpu.py).

Nothing here raises at import: without torch.distributed (or a torch lacking ``register_sharding``)
the rules are skipped, logged once, and :func:`sharding_rules_registered` returns False.
"""
import logging

log = logging.getLogger("torch_tk")

_registered = False
_unavailable_reason = None


def sharding_rules_registered():
    """True when the DTensor sharding rules of the tk ops are registered in this process."""
    return _registered


def unavailable_reason():
    """Why the rules are not registered (str), or None when they are."""
    return _unavailable_reason


def _rules():
    import torch
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.experimental import register_sharding

    R = Replicate()

    def _mm_strategies(self_spec, n_out_rows, n_out_cols):
        """(out, [self?, a, b]) placement lists of a 2-D product; self_spec None means no self."""
        def self_for(out):
            # placement of `self` (broadcastable to (M, N)) for an output placement
            if isinstance(out, Partial):
                return Partial()
            if isinstance(out, Shard):
                d = out.dim  # 0 rows, 1 columns
                nd = self_spec.ndim
                sd = d - (2 - nd)  # the dim of self aligned with output dim d (right-aligned broadcast)
                size = n_out_rows if d == 0 else n_out_cols
                if sd >= 0 and self_spec.shape[sd] == size and size != 1:
                    return Shard(sd)
            return R

        table = [
            (R, R, R),
            (Shard(0), Shard(0), R),
            (Shard(1), R, Shard(1)),
            (Partial(), Shard(1), Shard(0)),
        ]
        out = []
        for o, a, b in table:
            if self_spec is None:
                out.append(([o], [a, b]))
            else:
                out.append(([o], [self_for(o), a, b]))
        return out

    @register_sharding(torch.ops.tk.gemm.default)
    def _gemm_sharding(a, b, *, out_dtype=None):
        return _mm_strategies(None, a.shape[0], b.shape[1])

    @register_sharding(torch.ops.tk.addmm.default)
    def _addmm_sharding(self, mat1, mat2, *, beta=1, alpha=1, out_dtype=None):
        return _mm_strategies(self, mat1.shape[0], mat2.shape[1])

    @register_sharding(torch.ops.tk.linear.default)
    def _linear_sharding(input, weight, bias=None):
        nd = input.ndim
        has_bias = bias is not None

        def entry(out, i, w, b):
            return ([out], [i, w, b if has_bias else None])

        strategies = [entry(R, R, R, R)]
        for d in range(nd - 1):  # leading (batch) dims
            strategies.append(entry(Shard(d), Shard(d), R, R))
        strategies.append(entry(Shard(nd - 1), R, Shard(0), Shard(0)))  # column parallel
        strategies.append(entry(Partial(), Shard(nd - 1), Shard(1), Partial()))  # row parallel
        return strategies

    @register_sharding(torch.ops.tk.gemm_pair.default)
    def _gemm_pair_sharding(a0, b0, a1, b1):
        # every combination of the two products' own strategies (the products are independent)
        return [([o0[0], o1[0]], i0 + i1)
                for o0, i0 in _mm_strategies(None, a0.shape[0], b0.shape[1])
                for o1, i1 in _mm_strategies(None, a1.shape[0], b1.shape[1])]

    @register_sharding(torch.ops.tk.linear_backward.default)
    def _linear_backward_sharding(grad_output, weight, input):
        # (grad_input, grad_weight) from (grad_output, weight, input), as the table above
        return [([R, R], [R, R, R]),
                ([Shard(0), Partial()], [Shard(0), R, Shard(0)]),
                ([Partial(), Shard(0)], [Shard(1), Shard(0), R]),
                ([Shard(1), Shard(1)], [R, Shard(1), Shard(1)])]

    return _gemm_sharding, _addmm_sharding, _linear_sharding, _gemm_pair_sharding, _linear_backward_sharding


def _register():
    global _registered, _unavailable_reason
    try:
        import torch.distributed as dist

        if not dist.is_available():
            raise RuntimeError("torch.distributed is not available in this torch build")
        try:
            from torch.distributed.tensor.experimental import register_sharding  # noqa: F401
        except ImportError as e:
            raise RuntimeError(f"torch.distributed.tensor.experimental.register_sharding is missing ({e})")
        _rules()
        _registered = True
    except Exception as e:  # never fail `import torch_tk`
        _unavailable_reason = f"{type(e).__name__}: {e}"
        log.info("torch_tk: DTensor sharding rules for the tk ops not registered (DTensor inputs to tk ops "
                 "will not be supported): %s", _unavailable_reason)


_register()
