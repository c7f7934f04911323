"""Shared by test_rope_cpu.py and test_rope_gpu.py (not a test module): tk.linear_rope's float64
reference written independently of torch_tk/rope.py, in transformers' own form (full-width
tables cat(c, c), rotate_half), and tables built as transformers' LlamaRotaryEmbedding builds them."""
import torch


def tables(lead, half, dtype, device="cpu", base=10000.0):
    """(cos, sin) of shape (*lead, half) for positions 0 .. prod(lead) - 1 (random order, so every
    row differs), as transformers' default rotary embedding computes them (fp32, then the dtype)."""
    n = 1
    for d in lead:
        n *= d
    pos = torch.randperm(n, device=device).to(torch.float32).reshape(*lead, 1)
    inv_freq = 1.0 / (base ** (torch.arange(0, 2 * half, 2, device=device, dtype=torch.float32) / (2 * half)))
    freqs = pos * inv_freq
    return freqs.cos().to(dtype), freqs.sin().to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def ref64(x, w, cos, sin):
    """(x @ w^T) rotated per head in float64: y * C + rotate_half(y) * S with C = cat(cos, cos)."""
    y = x.detach().double() @ w.detach().double().t()
    half = cos.shape[-1]
    c = torch.cat((cos, cos), -1).double().unsqueeze(-2)
    s = torch.cat((sin, sin), -1).double().unsqueeze(-2)
    y3 = y.reshape(*y.shape[:-1], -1, 2 * half)
    return (y3 * c + rotate_half(y3) * s).reshape(y.shape)
