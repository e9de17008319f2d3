"""Checks, on a running Triton, that the Python peers of the react step
(bench/models/numpy_peer.py) compute what the react step computes, before
bench/sidecar-controllable.sh measures them.

    .venv/bin/python bench/peer_check.py --triton HOST:PORT --input x:768 \
        --backbone synth_backbone --head synth_head --ensemble synth \
        --react-model react_synth --react-ensemble synth_react \
        --pystep-model pystep_synth --pystep-ensemble synth_pystep --pybls synth_pybls \
        --preference t0=0.6,t1=0.4 --wp .cache/bench/synth/wp/t0=0.6,t1=0.4.npy

The reference is independent of both: the backbone's feature Z for a seeded
batch of 5 inputs, corrected in float64 with the W_p file written by
`calibrate solve` (z_hat = W @ z). The corrected features of the react model
and of the numpy step (called directly, the preference as the request
parameter react-preference) must each be within the float32 error bound of
that reference, element by element:

    |z_hat_i - ref_i| <= 2 (D + 2) u sum_j |W_ij| |z_j|,   u = 2^-24

(a float32 dot product of length D, plus W_p's own rounding to float32 on
the react side, which solves W_p itself). The logits of the react
ensemble, of the numpy-step ensemble and of the BLS model must match the
head's logits for the reference feature (rounded to float32) to 1e-4 of
their largest magnitude; without a preference the two ensembles must give
the plain ensemble's logits (to 1e-6), and a preference with no
precomputed W_p must be refused by both Python models. Any model flag left
out is not checked. Exits 1 on any failure.
"""

import argparse
import sys

import numpy as np
import tritonclient.grpc as grpcclient

PARAM = "react-preference"
U = 2.0 ** -24


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triton", required=True, help="Triton's gRPC address")
    ap.add_argument("--input", required=True, help="the backbone's input, NAME:DIMS (FP32)")
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--feature", default="feature", help="the backbone's output (default feature)")
    ap.add_argument("--head", required=True)
    ap.add_argument("--output", default="logits", help="the head's output (default logits)")
    ap.add_argument("--ensemble", help="the plain ensemble, backbone -> head")
    ap.add_argument("--react-model")
    ap.add_argument("--react-ensemble")
    ap.add_argument("--pystep-model")
    ap.add_argument("--pystep-ensemble")
    ap.add_argument("--pybls")
    ap.add_argument("--preference", required=True)
    ap.add_argument("--wp", required=True, help="the W_p .npy of --preference (calibrate solve)")
    ap.add_argument("--rows", type=int, default=5)
    args = ap.parse_args()

    name, dims = args.input.split(":")
    shape = [args.rows] + [int(d) for d in dims.split(",")]
    client = grpcclient.InferenceServerClient(args.triton)
    failures = []

    def infer(model, in_name, x, out_name, preference=None):
        inp = grpcclient.InferInput(in_name, list(x.shape), "FP32")
        inp.set_data_from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        params = {PARAM: preference} if preference is not None else None
        res = client.infer(model, [inp], outputs=[grpcclient.InferRequestedOutput(out_name)], parameters=params)
        return res.as_numpy(out_name)

    def report(what, ok, detail):
        print(f"peer-check: {'ok  ' if ok else 'FAIL'} {what}: {detail}")
        if not ok:
            failures.append(what)

    rng = np.random.default_rng(28)
    x = rng.random(shape, dtype=np.float32) if len(shape) > 2 else rng.standard_normal(shape, dtype=np.float32)
    z = infer(args.backbone, name, x, args.feature)
    w = np.load(args.wp)
    d = z.shape[1]
    if w.shape != (d, d) or w.dtype != np.float32:
        sys.exit(f"peer-check: {args.wp}: want a {d}x{d} float32 W_p, got {w.shape} {w.dtype}")
    w64, z64 = w.astype(np.float64), z.astype(np.float64)
    ref = z64 @ w64.T
    bound = 2 * (d + 2) * U * (np.abs(z64) @ np.abs(w64).T)

    def check_feature(what, got):
        err = np.abs(got.astype(np.float64) - ref)
        worst = float(np.max(err / bound))
        report(what, got.shape == ref.shape and worst <= 1.0,
               f"max |error| {err.max():.3g}, largest error / bound {worst:.3g} (D={d}, {args.rows} rows)")
        return got

    feats = {}
    if args.react_model:
        feats["react"] = check_feature(f"{args.react_model} (react step) against float64 W_p z",
                                       infer(args.react_model, args.feature, z, "corrected", args.preference))
    if args.pystep_model:
        feats["pystep"] = check_feature(f"{args.pystep_model} (numpy step) against float64 W_p z",
                                        infer(args.pystep_model, args.feature, z, "corrected", args.preference))
    if len(feats) == 2:
        diff = np.abs(feats["react"].astype(np.float64) - feats["pystep"])
        print(f"peer-check: info react step - numpy step: max |difference| {diff.max():.3g}, "
              f"{int(np.count_nonzero(diff))} of {diff.size} elements differ")

    # The whole pipelines against the head applied to the reference feature.
    want = infer(args.head, args.feature, ref.astype(np.float32), args.output).astype(np.float64)
    scale = float(np.max(np.abs(want)))
    logits = {}
    for what, model in (("react ensemble", args.react_ensemble), ("numpy-step ensemble", args.pystep_ensemble),
                        ("BLS model", args.pybls)):
        if not model:
            continue
        got = infer(model, name, x, args.output, args.preference)
        logits[model] = got
        err = float(np.max(np.abs(got - want)))
        report(f"{model} ({what}) against head(float64 W_p z)", err <= 1e-4 * scale,
               f"max |error| {err:.3g}, 1e-4 of the largest logit {1e-4 * scale:.3g}")

    # Without a preference: the plain ensemble's answer.
    if args.ensemble:
        plain = infer(args.ensemble, name, x, args.output).astype(np.float64)
        pscale = float(np.max(np.abs(plain)))
        for model in (args.react_ensemble, args.pystep_ensemble, args.pybls):
            if not model:
                continue
            err = float(np.max(np.abs(infer(model, name, x, args.output) - plain)))
            report(f"{model} without a preference against {args.ensemble}", err <= 1e-6 * pscale,
                   f"max |difference| {err:.3g}")

    # A preference with no precomputed W_p is refused, not served uncorrected.
    for model, in_name, inp in ((args.pystep_model, args.feature, z), (args.pybls, name, x)):
        if not model:
            continue
        try:
            infer(model, in_name, inp, "corrected" if model == args.pystep_model else args.output,
                  "no_such_task=1")
            report(f"{model} refuses a preference it has no W_p for", False, "it answered")
        except grpcclient.InferenceServerException as e:
            report(f"{model} refuses a preference it has no W_p for", "no W_p" in str(e), str(e)[:160])

    if failures:
        print(f"peer-check: {len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
