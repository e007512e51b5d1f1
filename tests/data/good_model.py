"""The same model written correctly: nothing to report."""
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 8, p: float = 0.1):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.p = p

    def forward(self, x, q, k, v):
        out, _ = self.attn(x, x, x, need_weights=False)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        z = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)
        return out, y, z
