"""A nanoGPT-style character model trained by Loom on CPU ranks. The model is
PyTorch as usual; the three lines marked LOOM replace the training loop.
Run: PYTHONPATH=python /usr/bin/python3 examples/nanogpt.py [--mesh dp=2,tp=2] [--steps N]"""
import argparse, math
import torch, torch.nn as nn, torch.nn.functional as F
from dataclasses import dataclass

@dataclass
class GPTConfig:
    block_size: int = 32; vocab_size: int = 64; n_layer: int = 2; n_head: int = 4; n_embd: int = 64

class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn, self.c_proj, self.n_head = nn.Linear(c.n_embd, 3 * c.n_embd), nn.Linear(c.n_embd, c.n_embd), c.n_head
        self.register_buffer("bias", torch.tril(torch.ones(c.block_size, c.block_size)).view(1, 1, c.block_size, c.block_size))
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(c.n_embd), CausalSelfAttention(c), nn.LayerNorm(c.n_embd)
        self.mlp = nn.Sequential(nn.Linear(c.n_embd, 4 * c.n_embd), nn.GELU(), nn.Linear(4 * c.n_embd, c.n_embd))
    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(c.vocab_size, c.n_embd), nn.Embedding(c.block_size, c.n_embd)
        self.h, self.ln_f = nn.ModuleList(Block(c) for _ in range(c.n_layer)), nn.LayerNorm(c.n_embd)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        for p in self.parameters():
            nn.init.normal_(p, 0.0, 0.02) if p.dim() == 2 else None
    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))

if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("--mesh", default=""); p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out", default="out/nanogpt")
    args = p.parse_args(); torch.manual_seed(0)
    text = open(__file__).read(); chars = sorted(set(text)); cfg = GPTConfig(vocab_size=len(chars))
    data = torch.tensor([chars.index(ch) for ch in text])
    starts = torch.randint(len(data) - cfg.block_size - 1, (args.steps, 8))
    xs = torch.stack([torch.stack([data[i:i + cfg.block_size] for i in row]) for row in starts])
    ys = torch.stack([torch.stack([data[i + 1:i + 1 + cfg.block_size] for i in row]) for row in starts])
    model = GPT(cfg); optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loss_fn = lambda logits, y: F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    import loom                                                                   # LOOM
    art = loom.compile(model, loss_fn, optimizer, (xs[0], ys[0]), mesh=args.mesh, out=args.out)  # LOOM
    losses = art.train((xs, ys), steps=args.steps); model.load_state_dict(art.load_state_dict())    # LOOM
    print(art.plan or "one device", *(f"step {k} loss {l:.4f}" for k, l in enumerate(losses)), sep="\n")
