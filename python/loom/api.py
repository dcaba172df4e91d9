"""Loom's Python API: compile a PyTorch model, loss and optimizer into a
Loom artifact, train it on CPU ranks, and take the weights back.

    import loom
    art = loom.compile(model, loss_fn, optimizer, (x, y), mesh="dp=2,tp=2",
                       strategy="auto", out="out/")
    losses = art.train((xs, ys), steps=10)    # xs: [steps, *x.shape]
    model.load_state_dict(art.load_state_dict())

`compile` traces the step (loom.torch), then runs `loomc` exactly as a user
would from a shell; `train` runs `loom-run` (with `-np` on a mesh). Their
messages come back as `LoomError`.
"""

import os
import re
import subprocess
from collections import OrderedDict

import numpy as np

__all__ = ["LoomError", "Artifact", "compile", "optimizer_flags"]


class LoomError(RuntimeError):
    """A Loom tool failed; the message is the tool's own."""


def _run(args):
    from loom import tool_path
    cmd = [tool_path(args[0]), *map(str, args[1:])]
    proc = subprocess.run(cmd, text=True, capture_output=True)
    if proc.returncode != 0:
        message = (proc.stderr.strip() or proc.stdout.strip()
                   or f"exit status {proc.returncode}")
        raise LoomError(f"{os.path.basename(cmd[0])} failed: {message}")
    return proc


def optimizer_flags(optimizer, traced):
    """loomc flags for a torch.optim optimizer over the traced model's
    parameters; what Loom cannot do as asked is an error."""
    import torch
    kind = type(optimizer).__name__
    if len(optimizer.param_groups) != 1:
        raise LoomError(f"{kind} has {len(optimizer.param_groups)} parameter "
                        "groups; Loom applies one set of hyperparameters to "
                        "every parameter")
    group = optimizer.param_groups[0]
    if group.get("maximize"):
        raise LoomError(f"{kind}(maximize=True) is not supported")
    if group.get("amsgrad"):
        raise LoomError(f"{kind}(amsgrad=True) is not supported")
    flags = [f"--lr={float(group['lr'])!r}",
             f"--weight-decay={float(group.get('weight_decay', 0.0))!r}"]
    if isinstance(optimizer, torch.optim.SGD):
        flags = ["--optimizer=sgd"] + flags + [
            f"--momentum={float(group['momentum'])!r}",
            f"--dampening={float(group['dampening'])!r}"]
        if group.get("nesterov"):
            flags.append("--nesterov")
    elif isinstance(optimizer, (torch.optim.AdamW, torch.optim.Adam)):
        name = "adamw" if isinstance(optimizer, torch.optim.AdamW) else "adam"
        b1, b2 = group["betas"]
        flags = [f"--optimizer={name}"] + flags + [
            f"--betas={float(b1)!r},{float(b2)!r}",
            f"--eps={float(group['eps'])!r}"]
    else:
        raise LoomError(f"optimizer {kind} is not supported (SGD, Adam and "
                        "AdamW are)")
    optimized = {id(p) for p in group["params"]}
    frozen = [p.name for p in traced.params
              if p.trainable and id(p.tensor) not in optimized]
    if frozen:
        flags.append("--frozen=" + ",".join(frozen))
    return flags


def _devices(mesh):
    if not mesh:
        return 1
    n = 1
    for axis in mesh.split(","):
        n *= int(axis.split("=")[1])
    return n


class Artifact:
    """A compiled training step on disk (the directory loomc wrote)."""

    def __init__(self, out, traced, devices, log):
        self.out = out
        self.traced = traced
        self.devices = devices
        self.log = log

    @property
    def plan(self):
        """The planner's report (plan.txt), or None for one device."""
        path = os.path.join(self.out, "plan.txt")
        return open(path).read() if os.path.exists(path) else None

    def write_data(self, data, directory=None):
        """Writes one .npy per batch element (a leading step axis); returns
        the directory and the number of entries."""
        import torch
        directory = directory or os.path.join(self.out, "data")
        os.makedirs(directory, exist_ok=True)
        if not isinstance(data, (tuple, list)) or \
                len(data) != len(self.traced.data_names):
            raise LoomError(
                f"train: data must be a tuple of {len(self.traced.data_names)} "
                f"arrays ({', '.join(self.traced.data_names)}), one per "
                "element of the example batch")
        entries = None
        for name, ty, array in zip(self.traced.data_names,
                                   self.traced.data_types, data):
            if isinstance(array, torch.Tensor):
                array = array.detach().cpu().numpy()
            array = np.ascontiguousarray(array)
            if entries is None:
                entries = array.shape[0]
            elif array.shape[0] != entries:
                raise LoomError(f"train: {name} has {array.shape[0]} entries, "
                                f"the first element {entries}")
            np.save(os.path.join(directory, name + ".npy"), array)
        return directory, entries

    def train(self, data, steps, np=None, checkpoint_every=0, resume=False,
              extra_args=()):
        """Trains until step `steps`; step k uses entry k of each array in
        `data`. Returns the losses of the steps run, as floats.

        Each call starts from the compiled initial weights, unless
        `resume=True`: then it continues from the latest checkpoint in
        OUT/checkpoints (written every `checkpoint_every` steps and after
        the last), under any number of ranks."""
        directory, _ = self.write_data(data)
        ranks = self.devices if np is None else np
        args = ["loom-run"]
        if ranks > 1:
            args += ["-np", ranks]
        args += [self.out, "--steps", steps, "--data", directory]
        checkpoints = os.path.join(self.out, "checkpoints")
        if checkpoint_every:
            args += ["--checkpoint-dir", checkpoints,
                     "--checkpoint-every", checkpoint_every]
        if resume:
            args += ["--resume", checkpoints]
        proc = _run(args + list(extra_args))
        self.log = proc.stdout
        found = [(int(m.group(1)), float(m.group(2))) for m in
                 re.finditer(r"^step (\d+) loss (\S+)", proc.stdout, re.M)]
        if not found or found[-1][0] != steps - 1:
            raise LoomError(f"loom-run did not reach step {steps}:\n"
                            f"{proc.stdout}")
        return [loss for _, loss in found]

    def load_state_dict(self):
        """The trained parameters and buffers as torch tensors under the
        module's own names (a tied weight under each of its names)."""
        import torch
        state = OrderedDict()
        for p in self.traced.params:
            if p.optimizer_state:
                continue
            found = None
            for sub in ("params-final", "optimizer-final"):
                path = os.path.join(self.out, sub, p.name + ".npy")
                if os.path.exists(path):
                    found = path
                    break
            if found is None:
                raise LoomError(f"no trained value of {p.name} in {self.out} "
                                "(train the artifact first)")
            tensor = torch.from_numpy(np.load(found)).to(p.tensor.dtype)
            for name in p.names:
                state[name] = tensor
        return state


def schedule_flags(scheduler, optimizer):
    """loomc flags for a torch.optim.lr_scheduler object stepped once per
    training step; a scheduler Loom cannot reproduce exactly is an error."""
    import torch
    sched = torch.optim.lr_scheduler
    kind = type(scheduler).__name__
    if getattr(scheduler, "optimizer", optimizer) is not optimizer:
        raise LoomError(f"{kind} schedules another optimizer than the one given")
    if getattr(scheduler, "last_epoch", 0) != 0:
        raise LoomError(f"{kind} has been stepped {scheduler.last_epoch} times; "
                        "pass a fresh scheduler (Loom starts at step 0)")
    if isinstance(scheduler, sched.CosineAnnealingLR):
        if scheduler.eta_min != 0:
            raise LoomError("CosineAnnealingLR with eta_min != 0 is not supported "
                            "(Loom's cosine decays to 0)")
        if float(scheduler.base_lrs[0]) != float(optimizer.param_groups[0]["lr"]):
            raise LoomError("CosineAnnealingLR's base learning rate is not the "
                            "optimizer's")
        return ["--lr-schedule=warmup-cosine", "--warmup-steps=0",
                f"--total-steps={int(scheduler.T_max)}"]
    raise LoomError(f"learning-rate scheduler {kind} is not supported "
                    "(CosineAnnealingLR with eta_min=0 is; loomc's "
                    "--lr-schedule=warmup-cosine through extra_args is Hugging "
                    "Face's get_cosine_schedule_with_warmup)")


def compile(model, loss_fn, optimizer, example_batch, mesh=None,
            strategy=None, cluster="cpu-local", out="loom-out",
            model_inputs=1, data_names=None, autodiff="loom", extra_args=(),
            grad_clip=None, lr_scheduler=None):
    """Traces `loss_fn(model(*inputs), *targets)` and compiles its training
    step with `optimizer`'s hyperparameters for `mesh` (e.g. "dp=2,tp=2";
    None or "" is one device). `strategy`: dp, tp, dp-tp, zero1-3, auto, ...
    (default: replicated on one device, auto on a mesh). Returns an
    Artifact; loomc's messages are raised as LoomError.

    `autodiff="loom"` traces forward + loss and lets Loom build backward and
    the update; `autodiff="pytorch"` traces PyTorch's own backward and
    `optimizer.step()` (SGD) and runs them as they are.

    What the user's training loop does around `optimizer.step()` is not
    traced: `grad_clip=max_norm` is torch.nn.utils.clip_grad_norm_(params,
    max_norm) before each step, and `lr_scheduler` a scheduler stepped
    after each (CosineAnnealingLR); anything else is an error."""
    from loom.torch import trace, TorchImportError
    if autodiff not in ("loom", "pytorch"):
        raise LoomError(f"autodiff must be 'loom' or 'pytorch', not {autodiff!r}")
    try:
        traced = trace(model, loss_fn, example_batch, model_inputs, data_names,
                       optimizer=optimizer if autodiff == "pytorch" else None)
    except TorchImportError as e:
        raise LoomError(str(e)) from e
    source = os.path.join(out, "source", "model.mlir")
    traced.write(source)
    flags = ["--optimizer=none"] if autodiff == "pytorch" else \
        optimizer_flags(optimizer, traced)
    if (grad_clip is not None or lr_scheduler is not None) and autodiff == "pytorch":
        raise LoomError("grad_clip and lr_scheduler apply to Loom's update "
                        "(autodiff='loom'); the traced PyTorch step has its own")
    if grad_clip is not None:
        if not float(grad_clip) > 0:
            raise LoomError(f"grad_clip must be a positive max norm, not {grad_clip!r}")
        flags.append(f"--grad-clip={float(grad_clip)!r}")
    if lr_scheduler is not None:
        flags += schedule_flags(lr_scheduler, optimizer)
    args = ["loomc", source, "--train", "--loss=none", "-o", out, *flags]
    if mesh:
        args += [f"--mesh={mesh}", f"--strategy={strategy or 'auto'}",
                 f"--cluster={cluster}"]
    elif strategy not in (None, "", "replicated", "none"):
        raise LoomError(f"strategy {strategy!r} needs a mesh (mesh=\"dp=2\", "
                        "...); one device is strategy='replicated'")
    args += list(extra_args)
    proc = _run(args)
    return Artifact(out, traced, _devices(mesh), proc.stdout + proc.stderr)
