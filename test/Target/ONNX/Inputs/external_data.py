"""Models whose initializer 'b' (float32 [4, 8], 128 bytes) is external
data, written with hostile locations, offsets and lengths (issue 17)."""
import os
import sys

from onnx import TensorProto, helper

out = sys.argv[1]
model_dir = os.path.join(out, "m")
os.makedirs(model_dir, exist_ok=True)
with open(os.path.join(model_dir, "weights.bin"), "wb") as f:
    f.write(bytes(range(256)) * 16)
with open(os.path.join(model_dir, "short.bin"), "wb") as f:
    f.write(bytes(100))
with open(os.path.join(out, "outside.bin"), "wb") as f:
    f.write(bytes(4096))
os.symlink("../outside.bin", os.path.join(model_dir, "link.bin"))


def model(name, **external):
    fields = {"location": "weights.bin", "offset": "256", "length": "128"}
    fields.update(external)
    b = TensorProto(name="b", data_type=TensorProto.FLOAT, dims=[4, 8])
    b.data_location = TensorProto.EXTERNAL
    for key, value in fields.items():
        if value is not None:
            e = b.external_data.add()
            e.key, e.value = key, value
    g = helper.make_graph([helper.make_node("MatMul", ["x", "b"], ["y"])], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                          [b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with open(os.path.join(model_dir, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


model("ok")
model("no-length", length=None)
model("escape", location="../outside.bin", offset="0")
model("etc", location="../../../../../../../../../../../../../../../../etc/hostname", offset="0")
model("link", location="link.bin", offset="0")
model("short", location="short.bin", offset="0")
model("past-end", offset="4000")
model("bad-offset", offset="12abc")
model("negative-offset", offset="-5")
model("wrong-length", length="64")
