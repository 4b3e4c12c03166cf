"""loom.compile, loom.Program and loom.Session: @token_log_probs of a
compiled model against PyTorch's nn.Transformer on the same weights (the
C++ reference test's models and tolerance), state read, set, saved and
loaded, and every bad input refused with an exception naming it."""

import os
import sys

import numpy as np
import pytest

import loom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "reference"))
reference = pytest.importorskip("test_transformer")


def padded(rows):
    width = max(len(r) for r in rows)
    return np.array([r + [0] * (width - len(r)) for r in rows], np.int32)


@pytest.fixture(scope="module", params=sorted(reference.CONFIGS))
def compiled(request, tmp_path_factory):
    tag = request.param
    c = reference.CONFIGS[tag]
    tmp = tmp_path_factory.mktemp(tag)
    cfg = str(tmp / "model.pbtxt")
    reference.write_config(cfg, c)
    weights = reference.random_weights(c, 7)
    path = str(tmp / "weights.safetensors")
    reference.save_safetensors(path, weights)
    program = loom.compile(config=cfg, max_tokens=256, max_len=c["max_len"],
                           max_batch=8)
    return c, weights, path, program


def test_token_log_probs_equal_pytorch(compiled):
    c, weights, path, program = compiled
    src_rows, tgt_rows = reference.make_batch(c, 8)
    _, expected, _ = reference.reference_outputs(c, weights, src_rows,
                                                 tgt_rows)
    session = loom.Session(program, threads=1)
    session.load_state(path)
    out = session.run("token_log_probs", src=padded(src_rows),
                      tgt=padded(tgt_rows))
    log_probs = out["log_probs"]
    assert log_probs.dtype == np.float32
    assert log_probs.shape == (len(tgt_rows), max(map(len, tgt_rows)) - 1)
    worst = 0.0
    for b, want in enumerate(expected):
        got = log_probs[b, :len(want)]
        worst = max(worst, float(np.max(np.abs(got - np.array(want)))))
    assert worst < reference.FORWARD_ATOL, worst


def test_signature_and_state_describe_the_program(compiled):
    c, weights, path, program = compiled
    assert "token_log_probs" in program.entries
    sig = program.signature("token_log_probs")
    assert [i["name"] for i in sig["inputs"]] == ["src", "tgt"]
    assert all(i["dtype"] == "i32" for i in sig["inputs"])
    assert [o["name"] for o in sig["outputs"]] == ["log_probs"]
    names = {s["name"] for s in program.state if s["parameter"]}
    assert names == set(weights)
    assert program.parameter_count == sum(w.size for w in weights.values())
    again = loom.Program.from_bytes(program.to_bytes())
    assert again.entries == program.entries


def test_state_reads_sets_saves_and_loads(compiled, tmp_path):
    c, weights, path, program = compiled
    session = loom.Session(program, threads=1)
    session.load_state(path)
    name = sorted(weights)[0]
    assert np.array_equal(session.state[name], weights[name])
    assert name in session.state and len(session.state) >= len(weights)
    session.state[name] = np.zeros_like(weights[name])
    assert not session.state[name].any()
    saved = str(tmp_path / "state.safetensors")
    session.save_state(saved)
    other = loom.Session(program, threads=1)
    other.load_state(saved)
    for key, value in session.state.items():
        assert np.array_equal(other.state[key], value), key


def test_outputs_are_arrays_the_session_hands_over(compiled):
    c, weights, path, program = compiled
    session = loom.Session(program, threads=1)
    session.init_parameters(seed=3)
    src = padded([[5, 6, 3], [7, 3]])
    tgt = padded([[2, 5, 3], [2, 6, 7, 3]])
    first = session.run("token_log_probs", src=src, tgt=tgt)["log_probs"]
    second = session.run("token_log_probs", src=src, tgt=tgt)["log_probs"]
    assert np.array_equal(first, second)
    assert first.flags["C_CONTIGUOUS"] and first.flags["OWNDATA"] is False
    # Lists convert when their kind agrees; a non-contiguous view is copied.
    from_lists = session.run("token_log_probs", src=src.tolist(),
                             tgt=tgt.tolist())["log_probs"]
    assert np.array_equal(from_lists, first)
    strided = np.ascontiguousarray(np.repeat(src, 2, axis=1))[:, ::2]
    assert not strided.flags["C_CONTIGUOUS"]
    viewed = session.run("token_log_probs", src=strided, tgt=tgt)["log_probs"]
    assert np.array_equal(viewed, first)


@pytest.mark.parametrize("inputs,error,mentions", [
    (dict(src=np.zeros((2, 3), np.int32)), loom.InvalidArgumentError,
     "needs input 'tgt'"),
    (dict(src=np.zeros((2, 3), np.int32), tgt=np.zeros((2, 3), np.int32),
          extra=1), loom.InvalidArgumentError, "no input 'extra'"),
    (dict(src=np.zeros((2, 3), np.int64), tgt=np.zeros((2, 3), np.int32)),
     loom.InvalidArgumentError, "input 'src' is int64, expected int32"),
    (dict(src=np.zeros((2, 3), np.float32).tolist(),
          tgt=np.zeros((2, 3), np.int32)),
     loom.InvalidArgumentError, "input 'src'"),
    (dict(src=np.zeros((2, 3, 1), np.int32), tgt=np.zeros((2, 3), np.int32)),
     loom.InvalidArgumentError, "input 'src' has shape [2, 3, 1]"),
    (dict(src=np.zeros((2, 3), np.int32), tgt=np.zeros((3, 3), np.int32)),
     loom.InvalidArgumentError, "input 'tgt'"),
    (dict(src=np.full((2, 3), 10**6, np.int32),
          tgt=np.full((2, 3), 2, np.int32)), loom.InvalidArgumentError,
     "id 1000000 is outside"),
])
def test_bad_inputs_raise_naming_the_input(compiled, inputs, error, mentions):
    c, weights, path, program = compiled
    session = loom.Session(program, threads=1)
    with pytest.raises(error) as raised:
        session.run("token_log_probs", **inputs)
    assert mentions in str(raised.value)


def test_bad_programs_sessions_and_state_raise(compiled, tmp_path):
    c, weights, path, program = compiled
    session = loom.Session(program, threads=1)
    with pytest.raises(loom.NotFoundError) as raised:
        session.run("no_such_entry")
    assert "no_such_entry" in str(raised.value)
    with pytest.raises(loom.CorruptError):
        loom.Program.from_bytes(b"not an executable")
    broken = bytearray(program.to_bytes())
    broken[len(broken) // 2] ^= 0xFF
    with pytest.raises(loom.CorruptError) as raised:
        loom.Program.from_bytes(bytes(broken))
    assert "checksum" in str(raised.value)
    junk = tmp_path / "junk.loomx"
    junk.write_bytes(b"LOOMEXE\n" + b"\0" * 40)
    with pytest.raises(loom.CorruptError):
        loom.Program.load(str(junk))
    with pytest.raises(loom.NotFoundError):
        loom.Program.load(str(tmp_path / "none.loomx"))
    with pytest.raises(loom.NotFoundError):
        session.state["no.such.tensor"]
    name = sorted(weights)[0]
    with pytest.raises(loom.InvalidArgumentError):
        session.state[name] = np.zeros((1, 1), np.float32)
    with pytest.raises(loom.Error):
        session.load_state(str(junk))
    with pytest.raises(loom.InvalidArgumentError):
        loom.Session(program, device="cpu", threads=-2)


def test_compile_refuses_bad_requests(tmp_path):
    with pytest.raises(loom.CompileError) as raised:
        loom.compile(preset="no-such-preset")
    assert "no-such-preset" in str(raised.value)
    with pytest.raises(loom.InvalidArgumentError):
        loom.compile()
    with pytest.raises(loom.CompileError) as raised:
        loom.compile(preset="tiny", max_len=0)
    assert "--max-len" in str(raised.value)
    with pytest.raises(loom.CompileError) as raised:
        loom.compile(preset="tiny", target="tpu")
    assert "tpu" in str(raised.value)
    with pytest.raises(loom.CompileError):
        loom.compile(preset="tiny", cpu="pentium")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not onnx")
    with pytest.raises(loom.CompileError):
        loom.compile(onnx=str(bad))


def test_a_saved_program_loads(tmp_path, compiled):
    c, weights, path, program = compiled
    out = str(tmp_path / "p.loomx")
    program.save(out)
    loaded = loom.Program.load(out)
    assert loaded.entries == program.entries
    assert loaded.parameter_count == program.parameter_count


ONNX_NODE_TESTS = "/usr/share/libonnx-testdata/data/node"


@pytest.mark.parametrize("case", ["test_gemm_transposeB", "test_softmax_axis_2", "test_layer_normalization_2d_axis1"])
def test_an_onnx_model_compiles_and_runs_as_onnx_says(case):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper
    folder = os.path.join(ONNX_NODE_TESTS, case)
    if not os.path.isdir(folder):
        pytest.skip("Debian's libonnx-testdata is not installed")
    model = os.path.join(folder, "model.onnx")
    program = loom.compile(onnx=model, max_tokens=256, max_len=32,
                           max_batch=8)
    data = os.path.join(folder, "test_data_set_0")

    def read(name):
        tensor = onnx.TensorProto()
        with open(os.path.join(data, name), "rb") as f:
            tensor.ParseFromString(f.read())
        return numpy_helper.to_array(tensor)

    inputs = [read(n) for n in sorted(os.listdir(data))
              if n.startswith("input_")]
    expected = read("output_0.pb")
    sig = program.signature("forward")
    assert len(sig["inputs"]) == len(inputs)
    session = loom.Session(program, threads=1)
    out = session.run("forward", **{i["name"]: a for i, a in
                                    zip(sig["inputs"], inputs)})
    got = list(out.values())[0]  # the outputs come in the graph's order
    assert got.shape == expected.shape
    assert np.allclose(got, expected, rtol=1e-5, atol=1e-6)
