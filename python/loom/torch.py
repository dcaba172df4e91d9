"""loom.torch: trace a PyTorch training step into the `loom` dialect.

    from loom.torch import trace
    traced = trace(model, loss_fn, (x, y))
    traced.write("out/model.mlir")      # loom IR + model.params.bin beside it

`trace` runs `loss_fn(model(*inputs), *targets)` under `make_fx` with fake
tensors (no real compute, nothing of the model changes) and imports the aten
graph op by op (the table is `ATEN_OPS`, documented in docs/pytorch.md) into
one function, `@forward`, whose result 0 is the loss. Loom then builds the
backward pass and the optimizer itself (`loomc --train --loss=none`), so its
autodiff, planner and partitioner see the whole step.

Buffers the forward pass changes (BatchNorm's running statistics and its
batch counter) become further results of `@forward`, each naming the
parameter it is the next value of; the training step passes them on, so
they evolve exactly as PyTorch's do.

An aten op outside the table raises `UnsupportedOp` naming the op and the
line of the user's code that called it (from the FX node's stack trace).
"""

import json
import operator
import os
import traceback

import numpy as np
import torch
from torch.fx.experimental import proxy_tensor
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils.stateless import functional_call

from loom.torch_recurrent import RecurrentError, recurrent_as_cells
from loom.torch_ops import (ATEN_OPS, TorchImportError, UnsupportedOp, Value,
                            _ints, _norm_range, _type_of, cast, constant,
                            element_type, mlir_type, reshape)

__all__ = ["trace", "Traced", "TorchImportError", "UnsupportedOp", "ATEN_OPS",
           "mlir_type"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_LOOM_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_NUMPY = {torch.float32: "<f4", torch.float64: "<f8", torch.float16: "<f2",
          torch.int64: "<i8", torch.int32: "<i4", torch.int8: "i1",
          torch.bool: "?"}


def _quote(name):
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Param:
    """One parameter or buffer tensor (tied names share one)."""

    def __init__(self, tensor, names, trainable, optimizer_state=False):
        self.tensor = tensor
        self.names = names
        self.trainable = trainable
        # A traced optimizer's state (autodiff="pytorch"), not the module's.
        self.optimizer_state = optimizer_state

    @property
    def name(self):
        return self.names[0]


def _parameters(model):
    """Every parameter and buffer once, in registration order, with all the
    names it has (a tied weight has several)."""
    found = {}
    for module_name, module in model.named_modules(remove_duplicate=False):
        prefix = module_name + "." if module_name else ""
        for kind, table in (("param", module._parameters),
                            ("buffer", module._buffers)):
            for local, t in table.items():
                if t is None:
                    continue
                full = prefix + local
                entry = found.get(id(t))
                if entry is None:
                    trainable = kind == "param" and t.requires_grad
                    found[id(t)] = _Param(t, [full], trainable)
                elif full not in entry.names:
                    entry.names.append(full)
    return list(found.values())


def _user_frame(node):
    """(file, line, code) of the user's code that produced `node`: the
    innermost frame of its stack trace outside torch and loom."""
    text = node.meta.get("stack_trace")
    if not text:
        return None
    frames = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        line = line.strip()
        if not line.startswith('File "'):
            continue
        path = os.path.normpath(line[6:line.index('"', 6)])
        try:
            number = int(line.split(", line ")[1].split(",")[0])
        except (IndexError, ValueError):
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) else ""
        frames.append((path, number, code))
    # walk_stack lists the innermost frame first.
    for path, number, code in frames:
        if not path.startswith((_TORCH_DIR, _LOOM_DIR, "<")):
            return path, number, code
    # PyTorch's backward pass and optimizer step (autodiff="pytorch") run
    # inside loom.torch: no line of the user's is involved.
    return None


class Traced:
    """The imported training step: IR text, parameters, data names."""

    def __init__(self, text, params, data_names, data_types, blobs):
        self.text = text
        self.params = params
        self.data_names = data_names
        self.data_types = data_types
        self._blobs = blobs

    def write(self, path):
        """Writes the IR to `path` (NAME.mlir) and the initial parameter
        values to NAME.params.bin beside it (the IR references them by
        offset): models written into one folder keep their own values."""
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        stem = os.path.basename(path)
        stem = stem[:-5] if stem.endswith(".mlir") else stem
        params = stem + ".params.bin"
        with open(os.path.join(directory, params), "wb") as f:
            for offset, blob in self._blobs:
                f.seek(offset)
                f.write(blob)
        with open(path, "w") as f:
            f.write(self.text.replace('#loom.external<"params.bin",',
                                      '#loom.external<' + json.dumps(params) + ','))
        return path


class _Importer:
    """Walks the FX graph; each aten node becomes loom ops (ATEN_OPS)."""

    def __init__(self, graph_module, params, data_names):
        self.gm = graph_module
        self.params = params
        self.data_names = data_names
        self.lines = []
        self.counter = 0
        self.loc = "unknown"
        self.node = None
        self.env = {}
        self.placeholder_of = {}
        # An in-place op's result is its first operand: later reads of
        # either see the tensor's latest value.
        self.alias_root = {}
        # Views of another node (_VIEW_OPS): an in-place write into one is
        # written back into the tensor it views (circular padding, masks
        # filled by regions), and a view read after its tensor changed is
        # taken again (views by node; the version of each written tensor;
        # each view's value and the version it was taken at).
        self.view_of = {}
        self.version = {}
        self.view_value = {}
        self.seed = 0

    def next_seed(self):
        """A distinct seed for each dropout of the model (Loom offsets it by
        the step and micro-batch)."""
        self.seed += 1
        return self.seed

    # Emission helpers used by the op table.
    def emit(self, body, shape, dtype, results=1):
        self.counter += 1
        name = f"%{self.counter}"
        head = f"{name}:{results}" if results > 1 else name
        self.lines.append(f"  {head} = {body} loc({self.loc})")
        if results > 1:
            return [name + f"#{i}" for i in range(results)]
        return Value(name, tuple(shape), dtype)

    def error(self, message):
        where = _user_frame(self.node) if self.node is not None else None
        at = f" at {where[0]}:{where[1]}: `{where[2]}`" if where else \
            " in PyTorch's traced backward pass or optimizer step"
        return TorchImportError(f"loom.torch: {message}{at}")

    def out(self, index=None):
        val = self.node.meta.get("val")
        if index is not None:
            if val is None:  # make_fx records tuples on the getitem users
                for user in self.node.users:
                    if user.target is operator.getitem and \
                            user.args[1] == index:
                        val = user.meta.get("val")
            else:
                val = val[index]
        if val is None:
            raise self.error(f"{self.node.target} has no recorded shape")
        return tuple(val.shape), val.dtype

    def run(self):
        graph = self.gm.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        args = []
        n_params = len(self.params)
        for i, node in enumerate(placeholders):
            val = node.meta["val"]
            ty = mlir_type(val.shape, val.dtype)
            arg = f"%arg{i}"
            self.env[node] = Value(arg, tuple(val.shape), val.dtype)
            if i < n_params:
                self.placeholder_of[node] = self.params[i]
                args.append(f"{arg}: {ty} {{loom.param = @{_quote(self.params[i].name)}}}")
            else:
                name = self.data_names[i - n_params]
                args.append(f"{arg}: {ty} {{loom.name = {_quote(name)}}}")
        bound = dict(self.env)
        self.trainable_dependent = set(
            n for n, p in self.placeholder_of.items() if p.trainable)
        for node in graph.nodes:
            if any(isinstance(a, torch.fx.Node) and a in self.trainable_dependent
                   for a in node.all_input_nodes):
                self.trainable_dependent.add(node)
        loss = None
        for node in graph.nodes:
            self.node = node
            if node.op == "placeholder":
                continue
            if node.op == "output":
                loss = self._loss(node)
                continue
            self._set_loc(node)
            if node.op == "get_attr":
                self.env[node] = constant(self, getattr(self.gm, node.target))
                continue
            if node.op != "call_function":
                raise self.error(f"FX node {node.op} is not supported")
            if not node.users and not _mutates(node):
                continue
            self.env[node] = self._call(node)
        results = [(loss, '{loom.name = "loss"}')]
        for node, param in self.placeholder_of.items():
            if self.env[node] is bound[node]:
                continue
            if param.trainable:
                raise TorchImportError(
                    f"loom.torch: the forward pass changes trainable parameter "
                    f"{param.name} in place; Loom's optimizer owns it")
            results.append((cast(self, self.env[node], param.tensor.dtype),
                            f"{{loom.param = @{_quote(param.name)}}}"))
        self.lines.append("  return " + ", ".join(v.name for v, _ in results)
                          + " : " + ", ".join(v.type for v, _ in results))
        signature = ", ".join(f"{v.type} {a}" for v, a in results)
        head = (f"func.func @forward({', '.join(args)}) -> ({signature}) {{")
        return head, self.lines

    def _set_loc(self, node):
        where = _user_frame(node)
        if where:
            self.loc = f'{_quote(where[0])}:{where[1]}:0'
        else:
            self.loc = _quote(str(node.target))

    def _loss(self, node):
        out = node.args[0]
        if isinstance(out, (tuple, list)):
            if len(out) != 1:
                raise self.error("the loss function must return one tensor "
                                 f"(the loss), not {len(out)} values")
            out = out[0]
        value = self.env.get(out)
        if not isinstance(value, Value) or value.shape != () or \
                not value.dtype.is_floating_point:
            raise self.error("the loss function must return a scalar float "
                             "tensor")
        return value

    def resolve(self, a):
        if isinstance(a, torch.fx.Node):
            a = self.alias_root.get(a, a)
            if a in self.view_value:
                return self._view(a)
            if a not in self.env:
                raise self.error(f"{a.name} was not imported")
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.resolve(x) for x in a)
        return a

    def _call(self, node):
        target = node.target
        if target is operator.getitem:
            seq, index = node.args
            values = self.env[seq]
            item = values[index]
            if item is None:
                raise self.error(
                    f"result {index} of {seq.target} is not supported (only "
                    "PyTorch's own backward reads it, and Loom does not import "
                    "that backward for this op yet: use autodiff='loom')")
            return item
        packet = getattr(target, "overloadpacket", None)
        name = getattr(packet, "__name__", str(target))
        handler = ATEN_OPS.get(str(target)) or ATEN_OPS.get(name)
        inplace = handler is None and name.endswith("_") and \
            not name.endswith("__")
        if inplace:
            handler = ATEN_OPS.get(name[:-1])
        if handler is None:
            hint = " (a PyTorch backward op: autodiff='loom' builds the " \
                "backward itself)" if "backward" in name else ""
            raise UnsupportedOp(self.error(
                f"aten op {target} is not supported{hint} (the ops Loom "
                "imports are listed in docs/pytorch.md)").args[0], str(target))
        args = self.resolve(node.args)
        kwargs = {k: self.resolve(v) for k, v in node.kwargs.items()}
        result = handler(self, *args, **kwargs)
        target = node.args[0] if node.args else None
        if name in _VIEW_OPS and isinstance(target, torch.fx.Node):
            self.view_of[node] = self.alias_root.get(target, target)
            self.view_value[node] = (self._version_of(node), result)
        written = self.alias_root.get(target, target) \
            if isinstance(target, torch.fx.Node) else None
        if inplace and written is not None and \
                written not in self.view_of and _is_view(written) and \
                self._read_later(written.args[0], node):
            # PyTorch changes the viewed tensor too, and it is read later.
            raise self.error(f"an in-place {name} into a view made by "
                             f"{written.target} is not supported")
        if inplace and written in self.view_of:
            view = written
            self._write_back(view, result)
            self.alias_root[node] = view
            return self.resolve(view)
        if inplace:
            self.rebind(node.args[0], result)
            self.alias_root[node] = self.alias_root.get(node.args[0],
                                                        node.args[0])
            self._touch(self.alias_root[node])
            return self.env[self.alias_root[node]]
        return result

    # Views and writes through them -------------------------------------

    def _read_later(self, base, node):
        """Whether `base` (or a view of it) is used after `node`."""
        if not isinstance(base, torch.fx.Node):
            return False
        after = False
        for n in self.gm.graph.nodes:
            if n is node:
                after = True
            elif after and base in n.all_input_nodes:
                return True
        return False

    def _root_of(self, node):
        while node in self.view_of:
            node = self.view_of[node]
        return node

    def _version_of(self, node):
        return self.version.get(self._root_of(node), 0)

    def _touch(self, root):
        self.version[root] = self.version.get(root, 0) + 1

    def _view(self, node):
        """A view's value, taken again from its tensor's latest value when
        that changed since (a view read after a write through another)."""
        taken, value = self.view_value[node]
        if taken == self._version_of(node):
            return value
        parent = self.resolve(self.view_of[node])
        saved, self.node = self.node, node
        try:
            rest = self.resolve(node.args[1:])
            kwargs = {k: self.resolve(v) for k, v in node.kwargs.items()}
            handler = ATEN_OPS.get(str(node.target)) or \
                ATEN_OPS[node.target.overloadpacket.__name__]
            value = handler(self, parent, *rest, **kwargs)
        finally:
            self.node = saved
        self.view_value[node] = (self._version_of(node), value)
        return value

    def _write_back(self, view, value):
        """`view` (a chain of slices and selects of a tensor) now holds
        `value`: each level's new value is its parent's with the block
        replaced (loom.pad of the block into zeros, loom.select by a
        constant mask), up to the tensor, which is rebound."""
        child = view
        while child in self.view_of:
            parent = self.view_of[child]
            old = self.resolve(parent)
            value = _insert_block(self, child, old, value)
            child = parent
        old = self.env[child]
        self.env[child] = cast(self, reshape(self, value, old.shape), old.dtype)
        self._touch(child)

    def rebind(self, node, value):
        """`node`'s tensor now holds `value` (an in-place op)."""
        node = self.alias_root.get(node, node)
        old = self.env[node]
        self.env[node] = cast(self, reshape(self, value, old.shape), old.dtype)


# Views an in-place write goes through: blocks (slice, select) and views
# of every element in another shape (written back as a reshape).
_VIEW_OPS = ("slice", "select", "as_strided", "view", "_reshape_alias",
             "_unsafe_view", "reshape", "squeeze", "unsqueeze", "alias",
             "detach")


def _is_view(node):
    """Whether `node`'s result aliases its first operand (a view op)."""
    schema = getattr(node.target, "_schema", None)
    return bool(schema) and bool(schema.returns) and \
        schema.returns[0].alias_info is not None and \
        not schema.returns[0].alias_info.is_write


def _insert_block(im, view, old, value):
    """`old` with the block `view` (a slice or select of it) replaced by
    `value`."""
    op = view.target.overloadpacket.__name__
    if op not in ("slice", "select"):
        return cast(im, reshape(im, value, old.shape), old.dtype)
    rank = len(old.shape)
    args = list(view.args[1:])
    starts, shape = [0] * rank, list(old.shape)
    mask = torch.zeros(old.shape, dtype=torch.bool)
    index = [slice(None)] * rank
    if op == "slice":
        dim, start, end, step = (args + [0, None, None, 1][len(args):])[:4]
        dim %= rank
        s, e = _norm_range(old.shape[dim], start, end)
        if step != 1:
            raise im.error("an in-place write into a strided slice is not "
                           "supported")
        starts[dim], shape[dim] = s, max(e - s, 0)
        index[dim] = slice(s, e)
    else:
        dim = args[0] % rank
        i = args[1] % old.shape[dim]
        starts[dim], shape[dim] = i, 1
        index[dim] = slice(i, i + 1)
    value = cast(im, reshape(im, value, tuple(shape)), old.dtype)
    if tuple(shape) == tuple(old.shape):
        return value
    low = list(starts)
    high = [n - s_ - g for n, s_, g in zip(old.shape, starts, shape)]
    padded = im.emit(f"loom.pad {value.name} low = {_ints(low)} high = "
                     f"{_ints(high)} value = 0.0 : {element_type(old.dtype)} "
                     f": ({value.type}) -> {_type_of(old.shape, old.dtype)}",
                     old.shape, old.dtype)
    mask[tuple(index)] = True
    m = constant(im, mask)
    return im.emit(f"loom.select {m.name}, {padded.name}, {old.name} : "
                   f"({m.type}, {padded.type}, {old.type}) -> {old.type}",
                   old.shape, old.dtype)


def _mutates(node):
    schema = getattr(node.target, "_schema", None)
    return bool(schema) and any(
        a.alias_info is not None and a.alias_info.is_write
        for a in schema.arguments)


def _to_tensor(x):
    if isinstance(x, torch.Tensor):
        return x.detach()
    return torch.as_tensor(np.asarray(x))


def _pytorch_step(model, loss_fn, optimizer, params, model_inputs):
    """The whole step as PyTorch runs it: forward, loss, torch.autograd.grad
    and `optimizer.step()` on the traced parameters. Every parameter and
    optimizer state becomes non-trainable: the step's own results update
    them (loomc --optimizer=none). Returns (params + states, step)."""
    if type(optimizer) is not torch.optim.SGD:
        raise TorchImportError(
            f"loom.torch: autodiff='pytorch' traces torch.optim.SGD only, not "
            f"{type(optimizer).__name__} (PyTorch 1.13's Adam and AdamW read "
            "the step count with .item(), which tracing cannot follow); use "
            "autodiff='loom'")
    if len(optimizer.param_groups) != 1:
        raise TorchImportError("loom.torch: one parameter group is supported")
    group = {k: v for k, v in optimizer.param_groups[0].items() if k != "params"}
    if group.get("momentum") and group.get("dampening"):
        raise TorchImportError(
            "loom.torch: autodiff='pytorch' with SGD dampening is not supported "
            "(PyTorch's first step skips it; a traced step is every step)")
    held = {id(t) for t in optimizer.param_groups[0]["params"]}
    trained = [i for i, p in enumerate(params)
               if p.trainable and id(p.tensor) in held]
    states = [_Param(torch.zeros_like(params[i].tensor),
                     [params[i].name + ".momentum_buffer"], False, True)
              for i in trained] if group.get("momentum") else []
    for p in params:
        p.trainable = False

    def step(tensors, *data):
        base, buffers = tensors[:len(params)], tensors[len(params):]
        leaves = [t.detach().requires_grad_(True) if i in trained else t
                  for i, t in enumerate(base)]
        bound = {n: leaves[i] for i, p in enumerate(params) for n in p.names}
        out = functional_call(model, bound, tuple(data[:model_inputs]))
        loss = loss_fn(out, *data[model_inputs:])
        grads = torch.autograd.grad(loss, [leaves[i] for i in trained])
        opt = torch.optim.SGD([base[i] for i in trained], **group)
        with torch.no_grad():
            for k, i in enumerate(trained):
                base[i].grad = grads[k]
                if buffers:
                    opt.state[base[i]] = {"momentum_buffer": buffers[k]}
            opt.step()
        return loss.detach()

    return params + states, step


def trace(model, loss_fn, example_batch, model_inputs=1, data_names=None,
          optimizer=None):
    """Traces `loss_fn(model(*batch[:model_inputs]), *batch[model_inputs:])`.

    With `optimizer` (torch.optim.SGD), the whole step is traced as PyTorch
    runs it, backward and update included (`_pytorch_step`); the result is
    compiled with `loomc --optimizer=none`.

    Returns a `Traced`: the `loom` IR of the forward pass and loss with every
    parameter and buffer of `model` as a `loom.parameter` (tied weights
    once, under their first name), starting from the model's current values.
    `data_names` names the batch elements (default `input0`, `input1`, ...
    then `target0`, ...); they are the .npy names `loom-run --data` reads.
    """
    batch = tuple(_to_tensor(x) for x in example_batch)
    if not 1 <= model_inputs <= len(batch):
        raise TorchImportError(
            f"loom.torch: model_inputs={model_inputs} but the example batch "
            f"has {len(batch)} elements")
    if data_names is None:
        data_names = [f"input{i}" for i in range(model_inputs)] + \
            [f"target{i}" for i in range(len(batch) - model_inputs)]
    if len(data_names) != len(batch):
        raise TorchImportError(
            f"loom.torch: {len(data_names)} data names for a batch of "
            f"{len(batch)} tensors")
    params = _parameters(model)

    def forward_step(tensors, *data):
        bound = {}
        for t, p in zip(tensors, params):
            for n in p.names:
                bound[n] = t
        out = functional_call(model, bound, tuple(data[:model_inputs]))
        return loss_fn(out, *data[model_inputs:])

    step = forward_step
    if optimizer is not None:
        params, step = _pytorch_step(model, loss_fn, optimizer, params,
                                     model_inputs)
    tracer_class = proxy_tensor.PythonKeyTracer
    saved = tracer_class.record_stack_traces
    tracer_class.record_stack_traces = True
    try:
        with recurrent_as_cells(model):
            gm = make_fx(step, tracing_mode="fake")(
                [p.tensor.detach() for p in params], *batch)
    except TorchImportError:
        raise
    except RecurrentError as e:
        raise TorchImportError(str(e)) from e
    except Exception as e:  # PyTorch's own tracing failures
        tb = traceback.extract_tb(e.__traceback__)
        user = [f for f in tb if not f.filename.startswith(_TORCH_DIR)
                and not f.filename.startswith(_LOOM_DIR)]
        at = f" at {user[-1].filename}:{user[-1].lineno}" if user else ""
        raise TorchImportError(
            f"loom.torch: tracing the training step failed{at}: "
            f"{type(e).__name__}: {e}") from e
    finally:
        tracer_class.record_stack_traces = saved

    importer = _Importer(gm, params, data_names)
    head, body = importer.run()
    decls, blobs, offset = [], [], 0
    for p in params:
        t = p.tensor.detach().contiguous()
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().tobytes()
        else:
            raw = t.numpy().astype(_NUMPY[t.dtype], copy=False).tobytes()
        ty = mlir_type(t.shape, t.dtype)
        flag = " trainable" if p.trainable else ""
        decls.append(f"loom.parameter @{_quote(p.name)} : {ty} = "
                     f'#loom.external<"params.bin", offset = {offset}>{flag}')
        blobs.append((offset, raw))
        offset += (len(raw) + 63) // 64 * 64
    text = "\n".join(
        ["// Traced from PyTorch by loom.torch (make_fx, aten ops)."] + decls
        + ["", head] + body + ["}", ""])
    data_types = [mlir_type(t.shape, t.dtype) for t in batch]
    return Traced(text, params, list(data_names), data_types, blobs)
