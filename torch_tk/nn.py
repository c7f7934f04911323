"""patch_linear / unpatch_linear: run a model's nn.Linear layers on ``torch.ops.tk.linear``.

Patching swaps the class of each exact ``nn.Linear`` to :class:`TKLinear` (a subclass), so the
module objects, their Parameter objects, state_dict keys and ``isinstance(m, nn.Linear)`` are
all unchanged; only ``forward`` differs. Subclasses of nn.Linear are left alone and reported.
"""
import logging
import weakref

import torch
from torch import nn

log = logging.getLogger("torch_tk")
_reports = weakref.WeakKeyDictionary()


class TKLinear(nn.Linear):
    """An nn.Linear whose forward is ``torch.ops.tk.linear(input, weight, bias)``."""

    def forward(self, input):
        return torch.ops.tk.linear(input, self.weight, self.bias)


def patch_linear(model):
    """Makes every exact ``nn.Linear`` in ``model`` (the root included) run on the tk kernels.

    In place and idempotent. Returns ``model``; the report is :func:`patch_report` (model).
    """
    report = {"patched": [], "skipped": {}}
    for fqn, m in model.named_modules():
        if type(m) is TKLinear:
            report["patched"].append(fqn)
        elif type(m) is nn.Linear:
            m.__class__ = TKLinear
            report["patched"].append(fqn)
        elif isinstance(m, nn.Linear):
            report["skipped"][fqn] = f"subclass {type(m).__name__} of nn.Linear (not patched by default)"
    _reports[model] = report
    log.info("torch_tk.patch_linear: %d patched, %d skipped", len(report["patched"]), len(report["skipped"]))
    return model


def unpatch_linear(model):
    """Restores stock ``nn.Linear`` on every module :func:`patch_linear` changed. Returns ``model``."""
    for _, m in model.named_modules():
        if type(m) is TKLinear:
            m.__class__ = nn.Linear
    _reports.pop(model, None)
    return model


def patch_report(model):
    """The last :func:`patch_linear` report for ``model``: {"patched": [fqn], "skipped": {fqn: reason}}."""
    return _reports.get(model, {"patched": [], "skipped": {}})
