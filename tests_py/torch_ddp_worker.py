"""One rank of tests_py/test_torch.py's distributed test: DDP over gloo, the test model, one step
under autocompare; rank 1's CPU log_sigmoid backward is faulty. Writes OUT/report<rank>.json and
saves failed calls under OUT/cases/rank<rank>/."""

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
if rank == 1:
    lib = torch.library.Library("aten", "IMPL")

    def faulty(grad_output, self, buffer):
        r = grad_output * torch.sigmoid(-self)
        r[0, 0, 0] = float("nan")
        return r

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib.impl("log_sigmoid_backward", faulty, "CPU")
with agt.autocompare(save_dir=os.path.join(out, "cases")) as report:
    tm.step(ddp, opt, batches(rank))
report.to_json(os.path.join(out, f"report{rank}.json"))
dist.barrier()
dist.destroy_process_group()
