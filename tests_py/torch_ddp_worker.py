"""One rank of tests_py/test_torch_scale.py's distributed test: DDP over gloo, the test model, two
steps under one autocompare (entered once per step); rank FAULT_RANK's CPU log_sigmoid backward is
faulty. Writes OUT/report<rank>.json, saves failed calls under OUT/cases/rank<rank>/, and on rank 0
the gathered report: OUT/gathered.json, OUT/summary.txt, OUT/ranks.png."""

import os
import sys
import warnings

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))
import ascendgrad.torch as agt  # noqa: E402
import torch_model as tm  # noqa: E402

out = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
model, _, batches = tm.make(seed=0)
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
if rank == int(os.environ.get("FAULT_RANK", "1")):
    lib = torch.library.Library("aten", "IMPL")

    def faulty(grad_output, self, buffer):
        r = grad_output * torch.sigmoid(-self)
        r[0, 0, 0] += 1.0  # finite: DDP's all-reduce would spread a NaN to every rank's weights
        return r

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.impl("log_sigmoid_backward", faulty, "CPU")
check = agt.autocompare(save_dir=os.path.join(out, "cases"))
for s in range(2):
    with check as report:
        tm.step(ddp, opt, batches(rank + 10 * s))
report.to_json(os.path.join(out, f"report{rank}.json"))
everyone = report.gather(dst=0)
if rank == 0:
    everyone.to_json(os.path.join(out, "gathered.json"))
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(everyone.summary())
    everyone.plot(os.path.join(out, "ranks.png"))
else:
    assert everyone is None
dist.barrier()
dist.destroy_process_group()
