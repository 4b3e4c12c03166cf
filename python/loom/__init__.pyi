# Type stubs of the loom package (its extension module included).
from os import PathLike
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import errors as errors
from .errors import (
    CompileError as CompileError,
    CorruptError as CorruptError,
    Error as Error,
    InternalError as InternalError,
    InvalidArgumentError as InvalidArgumentError,
    IoError as IoError,
    NotFoundError as NotFoundError,
    OutOfMemoryError as OutOfMemoryError,
    UnsupportedError as UnsupportedError,
)

__version__: str
_Path = Union[str, "PathLike[str]"]

class TranslationResult:
    hypotheses: List[str]
    scores: List[float]
    log_probs: List[float]
    alignments: List[List[Tuple[int, int]]]
    def __len__(self) -> int: ...
    def __getitem__(self, rank: int) -> str: ...

class Translator:
    folder: str
    def __init__(
        self,
        folder: _Path,
        device: Optional[str] = ...,
        threads: Optional[int] = ...,
        precision: Optional[str] = ...,
        workers: int = ...,
        executable: Optional[_Path] = ...,
        weights: Optional[_Path] = ...,
    ) -> None: ...
    def translate(
        self,
        sentences: Sequence[str],
        beam: int = ...,
        alpha: float = ...,
        nbest: int = ...,
        max_len_ratio: float = ...,
        return_scores: bool = ...,
        *,
        target_prefixes: Optional[Sequence[str]] = ...,
        batch: int = ...,
        batch_tokens: int = ...,
        split_long: bool = ...,
        min_length: int = ...,
        max_length: int = ...,
        repetition_penalty: float = ...,
        no_repeat_ngram_size: int = ...,
        forbidden: Sequence[str] = ...,
        length_penalty_power: bool = ...,
        sampling_topk: int = ...,
        sampling_topp: float = ...,
        sampling_temperature: float = ...,
        seed: int = ...,
        alignments: bool = ...,
        alignment_layer: int = ...,
    ) -> List[TranslationResult]: ...
    def translate_file(
        self,
        source: _Path,
        output: _Path,
        *,
        with_scores: bool = ...,
        target_prefix_file: str = ...,
        beam: int = ...,
        alpha: float = ...,
        nbest: int = ...,
        max_len_ratio: float = ...,
        **options: Any,
    ) -> Dict[str, str]: ...
    @property
    def workers(self) -> int: ...
    @property
    def max_source_tokens(self) -> int: ...

class Program:
    @staticmethod
    def load(path: _Path) -> "Program": ...
    @staticmethod
    def from_bytes(data: bytes) -> "Program": ...
    def save(self, path: _Path) -> None: ...
    def to_bytes(self) -> bytes: ...
    @property
    def entries(self) -> List[str]: ...
    def signature(self, entry: str) -> Dict[str, List[Dict[str, Any]]]: ...
    @property
    def state(self) -> List[Dict[str, Any]]: ...
    @property
    def parameter_count(self) -> int: ...
    @property
    def target(self) -> str: ...
    @property
    def bounds(self) -> str: ...

class StateView(Mapping[str, np.ndarray]):
    def keys(self) -> List[str]: ...  # type: ignore[override]
    def items(self) -> List[Tuple[str, np.ndarray]]: ...  # type: ignore[override]
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool: ...
    def __getitem__(self, name: str) -> np.ndarray: ...
    def __setitem__(self, name: str, value: Any) -> None: ...

class Session:
    def __init__(self, program: Program, device: str = ..., threads: Optional[int] = ...) -> None: ...
    def run(self, entry: str, **inputs: Any) -> Dict[str, np.ndarray]: ...
    def input_names(self, entry: str) -> List[str]: ...
    @property
    def program(self) -> Program: ...
    @property
    def device(self) -> str: ...
    @property
    def state(self) -> StateView: ...
    def init_parameters(self, seed: int = ...) -> None: ...
    def load_state(self, path: _Path) -> None: ...
    def save_state(self, path: _Path, parameters_only: bool = ...) -> None: ...

def compile(
    preset: Optional[str] = ...,
    config: Optional[_Path] = ...,
    onnx: Optional[_Path] = ...,
    target: str = ...,
    cpu: Optional[str] = ...,
    precision: Optional[str] = ...,
    max_tokens: int = ...,
    max_len: int = ...,
    max_batch: int = ...,
    dump_dir: Optional[_Path] = ...,
    cuda_arch: str = ...,
    warmup: int = ...,
    lr_scale: float = ...,
    clip_norm: float = ...,
    loss: Optional[str] = ...,
    loss_output: Optional[str] = ...,
    label_smoothing: float = ...,
    d_model: int = ...,
    data_parallel: bool = ...,
) -> Program: ...

def train(
    train: Tuple[_Path, _Path],
    out: _Path,
    *,
    preset: Optional[str] = ...,
    config: Optional[_Path] = ...,
    prepared: Optional[_Path] = ...,
    valid: Optional[Tuple[_Path, _Path]] = ...,
    steps: Optional[int] = ...,
    epochs: Optional[int] = ...,
    time_limit: Optional[float] = ...,
    threads: Optional[int] = ...,
    device: Optional[str] = ...,
    seed: Optional[int] = ...,
    max_tokens: Optional[int] = ...,
    max_sentences: Optional[int] = ...,
    warmup: Optional[int] = ...,
    lr_scale: Optional[float] = ...,
    clip_norm: Optional[float] = ...,
    precision: Optional[str] = ...,
    vocab_size: int = ...,
    bucket_mb: float = ...,
    valid_every: Optional[int] = ...,
    log_every: Optional[int] = ...,
    keep: Optional[int] = ...,
    resume: bool = ...,
    callback: Optional[Callable[[Dict[str, Any]], None]] = ...,
) -> Dict[str, Any]: ...
