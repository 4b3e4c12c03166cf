#!/usr/bin/env python3
"""Times PyTorch's nn.Transformer on a GPU: the peer of `loom-bench` there.

    pytorch_gpu_bench.py [--preset base] [--batch 32] [--src-len 30]
        [--tgt-len 30] [--modes train,decode,beam] [--beam 4]
        [--variants eager-fp32,eager-tf32,...] [--steps K]

The model, the training step and the cached greedy decoder are
bench/pytorch_bench.py's (its docstring says what a step is and how model
FLOPs are counted), moved to the GPU. Each variant prints one JSON line
with the keys that script prints, plus the variant, the peak GPU memory
and the model FLOP/s as a share of the GPU's dense peak for the precision
the GEMMs ran in (MFU):

    eager-fp32      float32, TF32 off (GEMMs in full float32)
    eager-tf32      float32 tensors, GEMMs on the tensor cores in TF32
    eager-bf16      bf16 autocast around the forward and the loss
    compile-fp32, compile-tf32, compile-bf16
                    the same under torch.compile (the training step's
                    forward and loss, compiled once; its compilation is in
                    the warm-up and out of the timings). Decoding under
                    torch.compile is not timed: the cache grows every step,
                    which recompiles or falls back to eager.

`beam` is beam search of --beam hypotheses a sentence with the same
cache (pytorch_bench.beam_cached), the fixed length `loom-bench --beam`
decodes; its tokens are the sentences' (B*T), its FLOPs every
hypothesis's.

torch.cuda.synchronize() comes before each timer starts and before it
stops; warm-up steps are not timed. Variants run in the order given, and
torch.compile's go last by default, since their compilation takes minutes.
`--device cpu` runs the same code on the CPU (fp32 only), so that the
script is exercised where there is no GPU (`gpu-check --device cpu`).
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_bench as pb  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# Dense peaks of an H100 SXM (the H200 has the same compute), TFLOP/s.
PEAK_TFLOPS = {"fp32": 67.0, "tf32": 495.0, "bf16": 989.0}
DEFAULT_VARIANTS = ("eager-fp32,eager-tf32,eager-bf16,"
                    "compile-tf32,compile-bf16")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", choices=sorted(pb.PRESETS), default="base")
    p.add_argument("--modes", default="train,decode,beam")
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--src-len", type=int, default=30)
    p.add_argument("--tgt-len", type=int, default=30)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--variants", default=DEFAULT_VARIANTS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = p.parse_args(argv)
    for name in ("batch", "src_len", "tgt_len", "steps"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    for v in a.variants.split(","):
        kind, _, precision = v.partition("-")
        if kind not in ("eager", "compile") or precision not in PEAK_TFLOPS:
            p.error(f"unknown variant {v!r}")
        if a.device == "cpu" and precision != "fp32":
            p.error(f"--device cpu runs fp32 only, not {v!r}")
    return a


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(step, warmup, steps, device):
    """Seconds of each of `steps` calls of step(i), after `warmup` calls."""
    times = []
    for i in range(warmup + steps):
        synchronize(device)
        start = time.perf_counter()
        step(i + 1)
        synchronize(device)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


def run_train(a, c, model, precision, compiled, gen):
    vocab = c["tgt_vocab"]
    src = torch.randint(pb.FIRST_WORD, c["src_vocab"], (a.batch, a.src_len),
                        generator=gen).to(a.device)
    tgt = torch.randint(pb.FIRST_WORD, vocab, (a.batch, a.tgt_len + 1),
                        generator=gen).to(a.device)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:].reshape(-1)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98),
                           eps=1e-9)

    def forward_loss(src, tgt_in, tgt_out):
        with torch.autocast(a.device, dtype=torch.bfloat16,
                            enabled=precision == "bf16"):
            logits = model(src, tgt_in)
            return F.cross_entropy(logits.reshape(-1, vocab).float(), tgt_out,
                                   ignore_index=pb.PAD,
                                   label_smoothing=c["label_smoothing"])

    loss_fn = torch.compile(forward_loss) if compiled else forward_loss
    losses = []

    def step(number):
        for group in opt.param_groups:
            group["lr"] = pb.loom_learning_rate(c["d_model"], number)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(src, tgt_in, tgt_out)
        loss.backward()
        opt.step()
        losses.append(loss.detach())

    times = timed(step, a.warmup, a.steps, a.device)
    values = [float(x) for x in losses]
    if not all(math.isfinite(x) for x in values):
        raise RuntimeError(f"a training loss is not finite: {values}")
    return times, {"loss_first": values[0], "loss_last": values[-1]}


def run_decode(a, c, model, precision, gen, beam=1):
    src = torch.randint(pb.FIRST_WORD, c["src_vocab"], (a.batch, a.src_len),
                        generator=gen).to(a.device)
    model.eval()

    def step(_):
        with torch.inference_mode(), torch.autocast(
                a.device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            if beam > 1:
                tokens = pb.beam_cached(model, src, a.tgt_len, beam)
            else:
                tokens = pb.greedy_cached(model, src, a.tgt_len)
        assert tokens.shape == (a.batch, a.tgt_len)

    return timed(step, a.warmup, a.steps, a.device), {}


def main():
    a = parse_args(sys.argv[1:])
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("pytorch_gpu_bench: error: PyTorch sees no GPU")
    on_gpu = a.device == "cuda"
    c = pb.PRESETS[a.preset]
    failed = False
    for mode in a.modes.split(","):
        for variant in a.variants.split(","):
            kind, _, precision = variant.partition("-")
            if kind == "compile" and mode != "train":
                continue
            if on_gpu:
                torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
                torch.backends.cudnn.allow_tf32 = precision == "tf32"
            torch.manual_seed(a.seed)
            gen = torch.Generator().manual_seed(a.seed + 1)
            model = pb.Seq2Seq(c).to(a.device)
            if on_gpu:
                torch.cuda.reset_peak_memory_stats()
            try:
                if mode == "train":
                    times, extra = run_train(a, c, model, precision,
                                             kind == "compile", gen)
                else:
                    times, extra = run_decode(
                        a, c, model, precision, gen,
                        a.beam if mode == "beam" else 1)
            except Exception as e:  # one variant's failure ends no other
                print(json.dumps({"framework": "pytorch", "mode": mode,
                                  "variant": variant, "error": str(e)[:500]}),
                      flush=True)
                failed = True
                continue
            stats = pb.summarize(times)
            seconds = stats["step_ms_median"] / 1e3
            beam = a.beam if mode == "beam" else 1
            decoding = "train" if mode == "train" else "decode"
            tokens = pb.tokens_per_step(decoding, a.batch, a.src_len,
                                        a.tgt_len)
            gflops = pb.model_flops(c, decoding, a.batch, a.src_len,
                                    a.tgt_len, beam) / 1e9
            print(json.dumps({
                "framework": "pytorch", "mode": decoding, "variant": variant,
                "preset": a.preset, "batch": a.batch, "src_len": a.src_len,
                "tgt_len": a.tgt_len, "beam": beam, "steps": a.steps,
                "warmup": a.warmup,
                "tokens_per_s": tokens / seconds, **stats,
                "model_gflops_per_step": gflops,
                "model_gflops_per_s": gflops / seconds,
                "mfu": gflops / seconds / 1e3 / PEAK_TFLOPS[precision],
                "tokens_per_step": tokens,
                "peak_gpu_bytes":
                    torch.cuda.max_memory_allocated() if on_gpu else None,
                "gpu": torch.cuda.get_device_name() if on_gpu else None,
                "peak_rss_bytes": pb.peak_rss_bytes(),
                "torch_version": torch.__version__, **extra}), flush=True)
            del model
            if on_gpu:
                torch.cuda.empty_cache()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
