"""Every public name of ascendgrad.torch, called from fully typed code: ``mypy --strict`` must pass
on this file (tests_py/test_typing.py checks it, and runs it).

    python examples/typed_torch_usage.py
"""

from __future__ import annotations

import os
import tempfile
from typing import Dict, List, Tuple

import torch
import torch.nn.functional as F

import ascendgrad.torch as agt
from ascendgrad.dump_check import CallResult


def functions() -> None:
    x = torch.randn(4, 5, requires_grad=True)
    t = torch.tensor([0, 1, 4, -100])
    y: torch.Tensor = agt.softmax(x, -1) + agt.softmax(x, 0, dtype=torch.float64).float()
    y = y + agt.logsigmoid(x) + agt.softshrink(x) + agt.softshrink(x, lambd=0.25)
    loss = agt.cross_entropy(x, t) + agt.cross_entropy(x, t.clamp(min=0), weight=torch.ones(5), ignore_index=1,
                                                       reduction="sum", label_smoothing=0.1)
    loss = loss + agt.kl_div(x, torch.rand(4, 5), reduction="sum") + agt.kl_div(x, torch.rand(4, 5), "batchmean", log_target=True)
    out: Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] = agt.npu_cross_entropy_loss(
        x, t, None, "mean", -100, 0.0, 1e-4, True)
    torch.autograd.backward(y.sum() + loss + out[0].sum() + out[2].sum())
    names: List[str] = [a.name for a in agt.APIS.values()]
    assert "Functional.softmax" in names


def modes() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(5, 5), torch.nn.LogSigmoid(), torch.nn.Softmax(-1))
    x = torch.randn(3, 5)
    mode = agt.ascend_backward()
    with mode:
        torch.autograd.backward(F.cross_entropy(model(x), torch.tensor([0, 1, 2])))

    @mode
    def step() -> float:
        return float(F.cross_entropy(model(x), torch.tensor([0, 1, 2])).detach())

    step()
    counts: Dict[str, Dict[str, int]] = mode.counts
    text: str = mode.summary()
    assert counts["Functional.softmax"]["routed"] == 2 and "routed" in text

    with tempfile.TemporaryDirectory() as tmp:
        check = agt.autocompare(standard="cann", on_fail="record", save_dir=tmp, apis=["Functional.*"], every=1)
        with check as report:
            torch.autograd.backward(F.cross_entropy(model(x), torch.tensor([0, 1, 2])))
        r: agt.AutocompareReport = report
        calls: List[CallResult] = r.calls
        failed: List[CallResult] = r.failed
        r.to_json(os.path.join(tmp, "report.json"))
        d = r.to_dict()
        assert len(calls) == 3 and not failed and not r.saved_cases and r.pending == 0 and d["calls"]
        assert isinstance(r.summary(), str) and r.not_judged == {}
    try:
        raise agt.GradientMismatchError("a call failed")
    except AssertionError as e:
        assert isinstance(e, agt.GradientMismatchError)
    assert issubclass(agt.GradientMismatchWarning, UserWarning)


if __name__ == "__main__":
    functions()
    modes()
    print("typed torch usage: ok")
