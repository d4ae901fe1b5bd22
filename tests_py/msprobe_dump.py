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
    ap.add_argument("--mapping", action="store_true", help="the calls of mapping() instead of the five forms")
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
    if args.mapping:
        mapping(name, true_grad)
    for dt in () if args.mapping else DTYPES:
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


def mapping(name, true_grad):
    """float32 calls whose verdict depends on each argument dump-check maps, passed positionally,
    by keyword or left to its default: data dense around ±lambd (a lambd 5 % off changes a quarter
    of the gradient), non-last softmax dims, cross-entropy targets hitting ignore_index (-100 by
    default: out of range for any other), weights far from 1, kl_div with every reduction."""

    def around(lam, *shape):  # |x| uniform on [0.9, 1.1] * lam, either sign
        sign = torch.where(torch.rand(*shape) < 0.5, -1.0, 1.0)
        return (sign * lam * (0.9 + 0.2 * torch.rand(*shape))).requires_grad_()

    for x, args, kw in ((around(0.5, 8, 16), (), {}), (around(0.3, 8, 16), (0.3,), {}),
                        (around(0.3, 8, 16), (), {"lambd": 0.3})):
        F.softshrink(x, *args, **kw).backward(torch.randn(8, 16))
        name("Functional.softshrink")
    with torch.no_grad():
        y = torch.softmax(torch.randn(5, 7), 0)
        name("Torch.softmax")
        torch._softmax_backward_data(torch.randn(5, 7), y, 0, torch.float32)
        name("Torch._softmax_backward_data")
        torch._softmax_backward_data(grad_output=torch.randn(5, 7), output=y, dim=0, input_dtype=torch.float32)
        name("Torch._softmax_backward_data")
    x = torch.randn(5, 7, requires_grad=True)
    F.softmax(x, dim=0).backward(torch.randn(5, 7))
    name("Functional.softmax")
    x = torch.randn(3, 4, 5, requires_grad=True)
    F.softmax(x).backward(torch.randn(3, 4, 5))  # no dim: PyTorch's implicit one, 0 for 3-D
    name("Functional.softmax")

    n, c = 12, 4
    t_default = torch.randint(0, c, (n,))
    t_default[:3], t_default[3:6] = -100, 0
    t3 = torch.randint(0, c, (n,))
    t3[:3] = 3
    w = 0.2 + 2.8 * torch.rand(c)
    for t, args, kw, up in ((t_default, (), {}, ()), (t3, (), dict(weight=w, ignore_index=3, reduction="sum",
                                                                  label_smoothing=0.2), ()),
                            (t3, (w, None, 3, None, "none", 0.1), {}, (n,))):
        x = torch.randn(n, c, requires_grad=True)
        F.cross_entropy(x, t, *args, **kw).backward(torch.rand(up) + 0.5)
        true_grad("Functional.cross_entropy", x)
    p = torch.softmax(torch.randn(6, 5), -1)
    for api, f, target, args, kw, up in (
            ("Functional.kl_div", F.kl_div, p, (), {}, 30.0),  # mean: gradients of order one
            ("Functional.kl_div", F.kl_div, p.log(), (), {"reduction": "batchmean", "log_target": True}, 1.0),
            ("Functional.kl_div", F.kl_div, p, (None, None, "sum", False), {}, 1.0),
            ("Torch.kl_div", torch.kl_div, p, (), {}, None),  # no reduction: PyTorch 2.13 computes none
            ("Torch.kl_div", torch.kl_div, p.log(), (), {"reduction": 2, "log_target": True}, 1.0)):
        x = torch.log_softmax(torch.randn(6, 5), -1).requires_grad_()
        loss = f(x, target, *args, **kw)
        loss.backward(torch.rand(loss.shape) + 0.5 if up is None else (torch.rand(()) + 0.5) * up)
        true_grad(api, x)


if __name__ == "__main__":
    main()
