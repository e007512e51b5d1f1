"""A small model with one finding of each fixable kind, and MHA001."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 8, p: float = 0.1):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads)
        self.p = p

    def forward(self, x, q, k, v):
        out, _ = self.attn(x, x, x)
        L = q.size(-2)
        causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal, is_causal=True)
        z = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p)
        return out, y, z
