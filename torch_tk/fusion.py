"""The class swap patch_linear's fusions share (torch_tk/mlp.py: SwiGLU MLPs; torch_tk/attention.py:
RoPE in attention): every module of a recognised class that can be fused gets a tk subclass of its own
class (modules, Parameters, state_dict keys and optimizer references stay), and back."""


def swap_classes(model, class_names, orig, skip_reason, is_patched, new_class, dry_run=False):
    """Gives each module of ``model`` whose class is named in ``class_names`` the class
    ``new_class(module)``, unless ``skip_reason(module, is_patched)`` says why not; modules already
    fused (their class a key of ``orig``, the fused -> original map) count as fused. Returns
    ([(fqn, fused class)], {fqn: reason})."""
    fused, skipped = [], {}
    for fqn, m in model.named_modules():
        cls = type(m)
        if cls in orig:
            fused.append((fqn, cls))
            continue
        if cls.__name__ not in class_names:
            continue
        why = skip_reason(m, is_patched)
        if why is not None:
            skipped[fqn] = why
            continue
        tk_cls = new_class(m)
        if not dry_run:
            m.__class__ = tk_cls
        fused.append((fqn, tk_cls))
    return fused, skipped


def restore_classes(model, orig):
    """Restores the original class (``orig``: fused -> original) of every fused module of ``model``."""
    for _, m in model.named_modules():
        if type(m) in orig:
            m.__class__ = orig[type(m)]
