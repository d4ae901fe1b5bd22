"""Make a real msprobe (mindstudio-probe) dump on CPU of the five operators, for the dump-check
tests: ``python tests_py/msprobe_dump.py OUT [--size N]``.

Writes the msprobe dump to OUT/dump (step0/proc<pid>/dump.json, dump_tensor_data/*.pt) and, for
the calls whose CPU record is an internal-node gradient (cross_entropy, kl_div), the true input
gradient PyTorch computed, to OUT/true_grads/<call>.pt: what an NPU's fused kernel records. Run in
a process of its own: msprobe patches torch's functions while it dumps.
"""

import argparse
import json
import os

import torch
import torch.nn.functional as F
from msprobe.pytorch import PrecisionDebugger

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=8, help="rows of each input (columns: 2x)")
    args = ap.parse_args()
    n, c = args.size, 2 * args.size
    cfg = os.path.join(args.out, "config.json")
    os.makedirs(os.path.join(args.out, "true_grads"), exist_ok=True)
    with open(cfg, "w") as f:
        json.dump({"task": "tensor", "dump_path": os.path.join(args.out, "dump"), "level": "L1",
                   "tensor": {"scope": [], "list": [], "data_mode": ["all"]}}, f)
    counters = {}

    def name(api):  # msprobe numbers the calls of each API from 0
        k = counters.get(api, 0)
        counters[api] = k + 1
        return f"{api}.{k}"

    def true_grad(api, x):
        torch.save(x.grad.detach().clone(), os.path.join(args.out, "true_grads", f"{name(api)}.pt"))

    torch.manual_seed(0)
    d = PrecisionDebugger(config_path=cfg)
    d.start()
    for dt in DTYPES:
        def leaf(*shape, scale=1.0):
            return (torch.randn(*shape) * scale).to(dt).requires_grad_()

        x = leaf(n, c)
        F.softmax(x, dim=-1).backward(torch.randn(n, c).to(dt))
        name("Functional.softmax")
        x = leaf(n, 3, c)
        x.softmax(1).backward(torch.randn(n, 3, c).to(dt))  # a middle dim
        name("Tensor.softmax")
        x = leaf(3, n, 4)
        torch.softmax(x, 0).backward(torch.randn(3, n, 4).to(dt))  # the first dim
        name("Torch.softmax")
        with torch.no_grad():  # the backward operator called on its own: a call with its own entry
            y = torch.softmax(torch.randn(n, c).to(dt), 1)
            torch._softmax_backward_data(torch.randn(n, c).to(dt), y, 1, dt)
        name("Torch.softmax")
        name("Torch._softmax_backward_data")
        x = leaf(n, c, scale=4.0)
        F.logsigmoid(x).backward(torch.randn(n, c).to(dt))
        name("Functional.logsigmoid")
        x = leaf(n, c)
        F.softshrink(x, lambd=0.3).backward(torch.randn(n, c).to(dt))
        name("Functional.softshrink")

        target = torch.randint(0, c, (n,))
        target[1] = 3
        weight = (torch.rand(c) + 0.5).to(dt)
        for kw in (dict(), dict(weight=weight, ignore_index=3), dict(label_smoothing=0.1, reduction="sum"),
                   dict(weight=weight, reduction="none")):
            x = leaf(n, c)
            loss = F.cross_entropy(x, target, **kw)
            loss.backward(torch.rand(loss.shape).to(dt) + 0.5)
            true_grad("Functional.cross_entropy", x)
        for kw in (dict(reduction="batchmean"), dict(reduction="sum", log_target=True), dict(reduction="mean")):
            x = F.log_softmax(torch.randn(n, c), -1).to(dt).requires_grad_()
            t = torch.rand(n, c)
            t = (t / t.sum(-1, keepdim=True)).to(dt)
            if kw.get("log_target"):
                t = torch.log(t.float()).to(dt)
            loss = F.kl_div(x, t, **kw)
            up = torch.rand(()) + 0.5
            if kw["reduction"] == "mean":  # gradients of order one, not 1/numel
                up = up * x.numel()
            loss.backward(up.to(dt))
            true_grad("Functional.kl_div", x)
        x = F.log_softmax(torch.randn(n, c), -1).to(dt).requires_grad_()
        torch.kl_div(x, torch.rand(n, c).to(dt), 2, log_target=False).backward(torch.rand(()).to(dt) + 0.5)
        true_grad("Torch.kl_div", x)  # reduction by its int code (2: sum)
    d.stop()
    d.step()


if __name__ == "__main__":
    main()
