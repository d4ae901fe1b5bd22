"""The small real model of the PyTorch-bridge tests and of bench/train_step.py: a language model of
two transformer blocks with a softmax attention, a log-sigmoid gate and a softshrink in the MLP,
trained with cross entropy (label smoothing, ignored positions) plus a KL distillation term.
Every one of the five operators is called through torch.nn.functional, as a model would."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.gate = nn.Linear(d, d)
        self.up = nn.Linear(d, 2 * d)
        self.down = nn.Linear(2 * d, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        h = self.norm1(x)
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        attn = F.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
        a = (attn @ v).transpose(1, 2).reshape(b, s, d)
        gate = torch.exp(F.logsigmoid(self.gate(h)))  # sigmoid through its log
        x = x + self.proj(a) * gate
        return x + self.down(F.softshrink(self.up(self.norm2(x)), 0.05))


class TinyLM(nn.Module):
    """Blocks with different head counts, so that their attention shapes differ."""

    def __init__(self, vocab: int = 64, d: int = 32, heads: tuple = (2, 4)) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, h) for h in heads)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


def loss_fn(logits: torch.Tensor, targets: torch.Tensor, teacher: torch.Tensor, ignore_index: int = 0) -> torch.Tensor:
    """Cross entropy (label smoothing, ignore_index) + KL distillation towards teacher logits."""
    flat = logits.reshape(-1, logits.shape[-1])
    ce = F.cross_entropy(flat, targets.reshape(-1), ignore_index=ignore_index, label_smoothing=0.1)
    soft = F.softmax(teacher.reshape(flat.shape).float(), dim=-1).to(flat.dtype)  # no grad: a teacher
    kd = F.kl_div(F.log_softmax(flat, dim=-1), soft, reduction="batchmean")
    return ce + 0.5 * kd


def make(seed: int = 0, dtype: torch.dtype = torch.float32, vocab: int = 64, d: int = 32, batch: int = 4, seq: int = 16,
         heads: tuple = (2, 4)):
    """(model, optimizer, batches(step) -> (tokens, targets, teacher)) with every number from `seed`."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = TinyLM(vocab, d, heads).to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)

    def batches(step: int):
        gs = torch.Generator().manual_seed(seed * 100003 + step)
        tokens = torch.randint(1, vocab, (batch, seq), generator=gs)
        targets = torch.roll(tokens, -1, 1)
        targets[:, -2:] = 0  # ignored positions
        teacher = torch.randn(batch, seq, vocab, generator=gs).to(dtype)
        return tokens, targets, teacher

    del g
    return model, opt, batches


def step(model, opt, batch) -> float:
    tokens, targets, teacher = batch
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(tokens), targets, teacher)
    loss.backward()
    opt.step()
    return float(loss.detach())
