"""`calibrate fit --triton` end to end, against the real Triton of
scripts/test.sh serving the demo zoo (tritonmodels/repo).

The test writes a few hundred calibration images of three tasks to a
temporary directory, runs calibrate fit --triton (built from cmd/calibrate
for the test) with the merged backbone (backbone_adamerging) and each task's
expert, and checks the
components file it wrote against an independent computation: the features
of the same images from onnxruntime, run here directly on the zoo's ONNX
files, and S_t = Σ z_ind z_mtlᵀ, G_t = Σ z_mtl z_mtlᵀ from them in float64.

The image-folder tests export the calibration split as PNG files: decoded by
calibrate (images.decode: go) or sent as BYTES to the zoo's preprocess_*
ensembles (images.decode: triton), they must give the statistics of the .npy
path; a corrupt file is named and fails the fit or is skipped.

Needs TRITON_GRPC_ADDR (exported by scripts/test.sh), the zoo models loaded
in that Triton, the zoo data (.cache/zoo-data, or ZOO_DATA) and go. Without
them the test skips, or fails when REACT_E2E=1.
"""

import subprocess

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
from safetensors import safe_open
from safetensors.numpy import load_file

from testenv import ROOT, VENV_PYTHON, ZOO, calib_images, manifest, need, need_models, zoo_data, zoo_split

BACKBONE = "backbone_adamerging"
TASKS = ["fashion", "mnist", "digits"]
# Samples per task (digits has only 297, so it takes all): with the chunk
# below, the last request of each task is partial.
N = 301
# Samples per request: several requests per task, several in flight.
CHUNK = 64
# Triton runs the same ONNX files with onnxruntime in other batch sizes, so
# the features may differ in the last bits of float32; sums over N samples
# then differ by a few 1e-7 relative to their size.
RTOL = 1e-5


@pytest.fixture(scope="module")
def triton_addr(triton_addr):
    """The Triton of scripts/test.sh, serving the backbone and the experts."""
    need_models(triton_addr, [BACKBONE] + [f"expert_{t}" for t in TASKS])
    return triton_addr


def _images(task):
    return calib_images(task, N)


def _features(model, x):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(ZOO / manifest()["files"][model]["path"]), options,
                                   providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    return session.run(None, {name: x})[0].astype(np.float64)


def _close(got, want, what):
    err = np.abs(got - want).max()
    scale = np.abs(want).max()
    assert err <= RTOL * scale, f"{what}: max abs error {err:.3g} exceeds {RTOL} x {scale:.3g}"


def test_fit_from_triton_matches_onnxruntime(triton_addr, calibrate, tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    images = {}
    for task in TASKS:
        images[task] = _images(task)
        np.save(inputs / f"{task}.npy", images[task])
    out = tmp_path / "components.safetensors"
    cmd = [str(calibrate), "fit", "--triton", triton_addr, "--inputs", str(inputs),
           "--backbone-model", BACKBONE, "--backbone-output", "feature",
           "--tasks", ",".join(TASKS), "--chunk", str(CHUNK), "--beta", "0.1", "--out", str(out)]
    cmd += [f"--expert={task}=expert_{task}" for task in TASKS]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"calibrate fit failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"

    tensors = load_file(str(out))
    with safe_open(str(out), framework="numpy") as f:
        meta = f.metadata()
    D = manifest()["D"]
    assert meta["tasks"] == ",".join(TASKS)
    assert meta["d"] == str(D)
    assert (meta["backbone.model"], meta["backbone.version"], meta["backbone.output"]) == (BACKBONE, "1", "feature")

    z_mtl_all = _features(BACKBONE, np.concatenate([images[t] for t in TASKS]))
    start = 0
    for task in TASKS:
        n = len(images[task])
        assert meta[f"task.{task}.n"] == str(n)
        assert (meta[f"task.{task}.expert"], meta[f"task.{task}.expert_version"],
                meta[f"task.{task}.expert_output"]) == (f"expert_{task}", "1", "feature")
        z_mtl = z_mtl_all[start:start + n]
        start += n
        z_ind = _features(f"expert_{task}", images[task])
        S, G = tensors[f"{task}.S"], tensors[f"{task}.G"]
        assert S.shape == G.shape == (D, D) and S.dtype == G.dtype == np.float64
        _close(S, z_ind.T @ z_mtl, f"{task}.S")
        _close(G, z_mtl.T @ z_mtl, f"{task}.G")
        W = tensors[f"{task}.W_orth"]
        np.testing.assert_allclose(W.T @ W, np.eye(D), atol=1e-9)


def test_fit_from_png_folders_equals_npy(triton_addr, calibrate, tmp_path):
    """The image-folder path gives the same statistics as the .npy path on the
    same images: scripts/zoo-png.py writes each task's calibration split as
    PNG files (its own encoder) and as the float32 tensor x / 255, and a fit
    of each, on the same models and chunks, must agree. calibrate decodes
    and scales 8-bit pixels to exactly float32(v) / 255, so with one request
    in flight (no two requests batched together differently) the features,
    and so the sums, are the same bits: the test asserts that, and the float
    tolerance of the contract besides."""
    png, npy, counts = _export_png(tmp_path)
    for inputs, name in ((png, "png"), (npy, "npy")):
        run = _fit(calibrate, triton_addr, inputs, tmp_path / f"{name}.safetensors")
        assert run.returncode == 0, f"calibrate fit --inputs {inputs} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    from_png, meta_png = _load(tmp_path / "png.safetensors")
    from_npy, meta_npy = _load(tmp_path / "npy.safetensors")
    for task in TASKS:
        assert meta_png[f"task.{task}.n"] == meta_npy[f"task.{task}.n"] == str(counts[task])
        for kind in ("S", "G", "W_orth"):
            got, want = from_png[f"{task}.{kind}"], from_npy[f"{task}.{kind}"]
            _close(got, want, f"{task}.{kind} from PNG against .npy")
            assert np.array_equal(got, want), f"{task}.{kind}: from PNG and from .npy differ (max {np.abs(got - want).max():.3g})"


def _export_png(tmp_path):
    """Each task's calibration split as PNG files (scripts/zoo-png.py, its own
    encoder) under tmp_path/png, and as the float32 tensor x / 255 under
    tmp_path/npy; the number of images per task."""
    paths = {task: zoo_split(task, "calib") for task in TASKS}
    png, npy = tmp_path / "png", tmp_path / "npy"
    export = subprocess.run([str(VENV_PYTHON), str(ROOT / "scripts" / "zoo-png.py"),
                             "--out", str(png), "--npy", str(npy), "--tasks", ",".join(TASKS), "--data", str(zoo_data())],
                            capture_output=True, text=True, timeout=300)
    assert export.returncode == 0, f"zoo-png.py failed:\n{export.stdout}\n{export.stderr}"
    counts = {}
    for task in TASKS:
        with np.load(paths[task]) as f:
            counts[task] = len(f["x"])
        assert len(list((png / task).glob("*.png"))) == counts[task]
    return png, npy, counts


def _fit(calibrate, triton_addr, inputs, out, tasks=TASKS, decode="go", on_error="fail"):
    """calibrate fit of tasks from inputs with the same chunks and one request
    in flight: the backbone and experts, or with decode triton the zoo's
    preprocess ensembles in front of them. Returns the run."""
    prefix = "preprocess_" if decode == "triton" else ""
    cmd = [str(calibrate), "fit", "--triton", triton_addr, "--inputs", str(inputs),
           "--backbone-model", prefix + BACKBONE, "--tasks", ",".join(tasks), "--chunk", str(CHUNK),
           "--in-flight", "1", "--image-decode", decode, "--image-on-error", on_error, "--quiet", "--out", str(out)]
    cmd += [f"--expert={task}={prefix}expert_{task}" for task in tasks]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def _load(out):
    with safe_open(str(out), framework="numpy") as f:
        meta = f.metadata()
    return load_file(str(out)), meta


def test_fit_decoded_on_triton_equals_npy(triton_addr, calibrate, tmp_path):
    """images.decode: triton: the PNG files go as BYTES to the zoo's
    preprocess ensembles (Pillow decodes them in Triton, then the backbone or
    expert runs), and the statistics are those of the .npy path on the same
    images: within float tolerance, as the contract asks, and in fact bit for
    bit, since the preprocessing model gives exactly x / 255 and one request
    in flight sends the backbone the same batches."""
    png, npy, counts = _export_png(tmp_path)
    for inputs, decode in ((png, "triton"), (npy, "go")):
        run = _fit(calibrate, triton_addr, inputs, tmp_path / f"{decode}.safetensors", decode=decode)
        assert run.returncode == 0, f"calibrate fit --image-decode {decode} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    on_triton, meta_triton = _load(tmp_path / "triton.safetensors")
    from_npy, meta_npy = _load(tmp_path / "go.safetensors")
    assert meta_triton["backbone.model"] == f"preprocess_{BACKBONE}"
    for task in TASKS:
        assert meta_triton[f"task.{task}.n"] == meta_npy[f"task.{task}.n"] == str(counts[task])
        assert meta_triton[f"task.{task}.expert"] == f"preprocess_expert_{task}"
        for kind in ("S", "G", "W_orth"):
            got, want = on_triton[f"{task}.{kind}"], from_npy[f"{task}.{kind}"]
            _close(got, want, f"{task}.{kind} decoded on Triton against .npy")
            assert np.array_equal(got, want), f"{task}.{kind}: decoded on Triton and from .npy differ (max {np.abs(got - want).max():.3g})"


def test_fit_decoded_on_triton_corrupt_file(triton_addr, calibrate, tmp_path):
    """A PNG cut short (its header intact, so only the decoder finds it) among
    a task's files: with images.on_error: fail the fit stops naming it and
    Triton's reason; with skip it is named and left out, and the statistics
    are those of the folder without it (the .npy of the split)."""
    png, npy, counts = _export_png(tmp_path)
    task = "digits"
    files = sorted((png / task).glob("*.png"))
    corrupt = png / task / (files[100].stem + "x.png")  # sorts after files[100]: sample 101
    corrupt.write_bytes(files[100].read_bytes()[:60])

    run = _fit(calibrate, triton_addr, png, tmp_path / "fail.safetensors", tasks=[task], decode="triton")
    assert run.returncode == 1, f"exit {run.returncode}:\n{run.stderr}"
    assert f"task {task}: {corrupt} (sample 101): does not decode on Triton: backbone model " in run.stderr, run.stderr
    assert "InvalidArgument: in ensemble 'preprocess_backbone_adamerging', preprocess: image 0 of 1: cannot decode: image file is truncated" in run.stderr, run.stderr
    assert "images.on_error: skip leaves such files out" in run.stderr and "the 64 samples before are saved in" in run.stderr, run.stderr
    assert not (tmp_path / "fail.safetensors").exists()

    run = _fit(calibrate, triton_addr, png, tmp_path / "skip.safetensors", tasks=[task], decode="triton", on_error="skip")
    assert run.returncode == 0, f"exit {run.returncode}:\n{run.stderr}"
    assert f"calibrate: task {task}: skipped {corrupt}: does not decode on Triton: backbone model" in run.stderr, run.stderr
    assert f"calibrate: task {task}: 1 image files skipped" in run.stderr, run.stderr
    run = _fit(calibrate, triton_addr, npy, tmp_path / "npy.safetensors", tasks=[task])
    assert run.returncode == 0, run.stderr
    skipped, meta = _load(tmp_path / "skip.safetensors")
    want, _ = _load(tmp_path / "npy.safetensors")
    assert meta[f"task.{task}.n"] == str(counts[task])
    for kind in ("S", "G", "W_orth"):
        _close(skipped[f"{task}.{kind}"], want[f"{task}.{kind}"], f"{task}.{kind} with the corrupt file skipped against .npy")


# feature_ints (triton/testdata/repo): two integer inputs, versions 1 and 2.
INTS_MODEL = "feature_ints"


@pytest.fixture(scope="module")
def ints_triton(triton_addr):
    """The Triton of scripts/test.sh, serving feature_ints versions 1 and 2."""
    addr = triton_addr
    client = grpcclient.InferenceServerClient(addr)
    try:
        ready = client.is_model_ready(INTS_MODEL, "1") and client.is_model_ready(INTS_MODEL, "2")
    finally:
        client.close()
    need(ready, f"{INTS_MODEL} versions 1 and 2 are not loaded in the Triton at {addr}")
    return addr


def _ints_features(version, ids, mask):
    """feature_ints's map from its definition, in float64, rounded to float32."""
    j, k = np.meshgrid(np.arange(4), np.arange(6), indexing="ij")
    w = np.sin(version * (j + 1) + 0.37 * k)
    x = np.concatenate([ids.astype(np.float64), mask.astype(np.float64)], axis=1)
    return (x @ w.T).astype(np.float32).astype(np.float64)


@pytest.mark.parametrize("compressed", [False, True], ids=["savez", "savez_compressed"])
def test_fit_from_triton_integer_inputs_of_a_two_input_model(ints_triton, calibrate, tmp_path, compressed):
    """A backbone of two integer inputs (INT64 ids, UINT8 mask) calibrates
    from an .npz per task, as numpy writes it: the statistics equal those of
    the features computed here from the integers (issue 27 item 6)."""
    rng = np.random.default_rng(5)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    data = {}
    for task, n in {"a": 37, "b": 20}.items():
        ids = rng.integers(-1000, 30000, size=(n, 3), dtype=np.int64)
        mask = rng.integers(0, 2, size=(n, 3), dtype=np.uint8)
        data[task] = (ids, mask)
        (np.savez_compressed if compressed else np.savez)(inputs / f"{task}.npz", input_ids=ids, mask=mask)
    out = tmp_path / "components.safetensors"
    cmd = [str(calibrate), "fit", "--triton", ints_triton, "--inputs", str(inputs),
           "--backbone-model", INTS_MODEL, "--backbone-version", "1", "--chunk", "8",
           f"--expert=a={INTS_MODEL}:2", f"--expert=b={INTS_MODEL}:2", "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"calibrate fit failed ({run.returncode}):\n{run.stdout}\n{run.stderr}"
    tensors = load_file(str(out))
    for task, (ids, mask) in data.items():
        z_mtl, z_ind = _ints_features(1, ids, mask), _ints_features(2, ids, mask)
        _close(tensors[f"{task}.S"], z_ind.T @ z_mtl, f"{task}.S")
        _close(tensors[f"{task}.G"], z_mtl.T @ z_mtl, f"{task}.G")


def test_fit_from_triton_refuses_float_samples_for_an_integer_input(ints_triton, calibrate, tmp_path):
    """float32 arrays for an integer input are refused before any request,
    with the numpy dtype to save them as, not a suggestion that the next
    check refuses."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    np.savez(inputs / "a.npz", input_ids=np.zeros((4, 3), np.int64), mask=np.zeros((4, 3), np.float32))
    cmd = [str(calibrate), "fit", "--triton", ints_triton, "--inputs", str(inputs),
           "--backbone-model", INTS_MODEL, "--backbone-version", "1", f"--expert=a={INTS_MODEL}:2",
           "--out", str(tmp_path / "c.safetensors")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert 'input "mask" has datatype UINT8' in run.stderr and "save it as numpy.uint8" in run.stderr, run.stderr
