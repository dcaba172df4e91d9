// Reference outputs from ONNX Runtime (onnxruntime-node, an executor nobody
// here wrote) for Loom's real-model tests:
//
//   ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0
//   NODE_PATH=node_modules node scripts/ort-reference.js MODEL.onnx DIR
//
// reads DIR/input_<i>.npy (float32, int64; the graph's inputs in order) and
// writes DIR/output_<i>.npy, which `loom-run MODEL --input-dir DIR
// --expected-dir DIR` compares against.
const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");

const DTYPES = {"<f4": ["float32", Float32Array], "<i8": ["int64", BigInt64Array],
                "<i4": ["int32", Int32Array], "<f8": ["float64", Float64Array]};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.slice(10, 10 + headerLen).toString("latin1");
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1]
      .split(",").map((s) => s.trim()).filter((s) => s).map(Number);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const [type, Ctor] = DTYPES[descr] || [];
  if (!type) throw new Error(`${file}: dtype ${descr} not supported`);
  const body = buf.slice(10 + headerLen);
  const data = new Ctor(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  return new ort.Tensor(type, data, shape);
}

function writeNpy(file, tensor) {
  const descr = {float32: "<f4", int64: "<i8", int32: "<i4", float64: "<f8"}[tensor.type];
  if (!descr) throw new Error(`output type ${tensor.type} not supported`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(", ")})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += " ".repeat(63 - ((10 + header.length) % 64)) + "\n";
  const pre = Buffer.alloc(10);
  pre.write("\x93NUMPY", 0, "latin1");
  pre.writeUInt8(1, 6);
  pre.writeUInt8(0, 7);
  pre.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, "latin1"), data]));
}

async function main() {
  const [model, dir] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    feeds[name] = readNpy(path.join(dir, `input_${i}.npy`));
  });
  const results = await session.run(feeds);
  session.outputNames.forEach((name, i) => {
    writeNpy(path.join(dir, `output_${i}.npy`), results[name]);
    console.log(`output ${i} '${name}': [${results[name].dims}] ${results[name].type}`);
  });
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
