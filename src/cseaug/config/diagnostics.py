"""The ``diagnostics`` section: the per-version histograms, pattern order and contamination
checks, and the row filters they drive (docs/diagnostics.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from cseaug.config.base import StrictModel

MINILM_REVISION = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
"""The hub commit of sentence-transformers/all-MiniLM-L6-v2 the project pins; see
:mod:`cseaug.encoders.minilm`."""


class DiagnosticsConfig(StrictModel):
    """Per-version diagnostics (docs/diagnostics.md): MER / cosine-similarity histograms,
    pattern-order checks, contamination with the STS / SICK evaluation sets."""

    enabled: bool = Field(True, description="Write diagnostics/ into every published version.")
    encoder: str = Field(
        "sentence-transformers/all-MiniLM-L6-v2",
        description="Sentence encoder for cosine similarity: 'sentence-transformers/all-MiniLM-L6-v2' "
        "(from the Hugging Face hub at encoder_revision, cached), another Hugging Face name such as "
        "'bert-base-uncased' (NGCSE's BERT-base [CLS]), or a local model directory.",
    )
    encoder_revision: str = Field(
        MINILM_REVISION,
        pattern=r"^[0-9a-f]{40}$",
        description="Hub commit of all-MiniLM-L6-v2 (the default encoder) that is loaded and cached.",
    )
    pooling: Literal["auto", "sentence_transformers", "cls"] = Field(
        "auto",
        description="'auto': the sentence-transformers pipeline when the model has one, else the "
        "last hidden state of [CLS] (NGCSE's choice); or force either.",
    )
    device: str = Field(
        "auto", description="Encoder device: auto (cuda when available), cpu, cuda, cuda:1, ..."
    )
    batch_size: int = Field(64, ge=1, description="Sentences per encoder forward pass.")
    max_seq_length: int | None = Field(
        None,
        ge=8,
        description="Truncate sentences to this many tokens (None: the model's own limit).",
    )
    torch_threads: int | None = Field(
        1,
        ge=1,
        description="torch.set_num_threads for encoding on CPU (1 was fastest on 2 vCPUs); None keeps "
        "torch's default.",
    )
    publish_threads: Annotated[int, Field(ge=1)] | Literal["all"] | None = Field(
        "all",
        description="Threads of the torch encoder while a shard's CS step or the diagnostics wait "
        "for it, and once generation is over (it embeds ahead with torch_threads while the LLM "
        "generates): "
        "'all' (every core this process may use: diagnostics 1.6x faster on the 2-vCPU machine "
        "when the build had it to itself), a number, or None (keep torch_threads: better on a "
        "machine shared with other heavy work, docs/performance.md).",
    )
    embedding_cache: bool = Field(
        True,
        description="Keep embeddings on disk under <work_dir>/cache/embeddings (sqlite, one file per "
        "encoder), keyed by a hash of the text, so reruns and repeated anchors are embedded once.",
    )
    cs_sample: int | None = Field(
        3_000,
        ge=1,
        description="Compute cosine similarity on a seeded sample of at most this many rows with views "
        "(None: all rows; MER is always computed on all rows). 3,000 rows keep the 95th percentile "
        "error of each view's quartiles under half a 0.025 histogram bin "
        "(benchmarks/bench_cs_sample.py, docs/performance.md); an STS build's 12,000 texts take "
        "~3 min of one CPU thread in float64 (benchmarks/bench_encoder_precision.py), mostly "
        "while the LLM generates.",
    )
    seed: int = Field(0, description="Seed of the cosine-similarity sample.")
    mer_bins: int = Field(
        40, ge=2, le=1000, description="Histogram bins of MER over [0, 1] (shared by every panel)."
    )
    cs_bins: int = Field(
        80,
        ge=2,
        le=2000,
        description="Histogram bins of cosine similarity over [-1, 1] (shared by every panel).",
    )
    bands: dict[Literal["mer", "cs"], list[tuple[float, float]]] = Field(
        default_factory=lambda: {"mer": [(0.15, 0.6)], "cs": [(0.5, 1.0)]},
        description="Closed intervals whose share of values is reported per view, e.g. OssCSE's "
        "back-translation MER range [0.15, 0.6].",
    )
    pattern_filter: Literal["off", "mer", "cs", "both"] = Field(
        "off",
        description="Drop rows whose views break the order positive > intermediate > negative in "
        "similarity (CS falls, MER rises) to rejects with reason 'pattern_order'; 'off' only reports it.",
    )
    reference: dict[Literal["stsb", "nli"], str] = Field(
        default_factory=dict,
        description="Human-written pairs drawn beside the version as in NGCSE's Figure 7 "
        "(figure7.png, shown by the report): {stsb: <an STS-B file>, nli: <NLI triples csv>}; "
        "empty: no figure.",
    )
    eval_data_dir: str | None = Field(
        None,
        description="Directory holding the evaluation sets for the contamination check (layout of "
        "shared/data: senteval_sts/STS1x-en-test, senteval_sts/STSBenchmark or stsbenchmark, sick); "
        "None skips the check.",
    )
    contamination_fields: Literal["anchor", "any"] = Field(
        "any",
        description="Which texts count for contamination: the anchor only, or the anchor and every view.",
    )
    remove_contaminated: bool = Field(
        False,
        description="Drop contaminated rows to rejects with reason 'contamination' (needs eval_data_dir); "
        "False only reports them.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> DiagnosticsConfig:
        for metric, intervals in self.bands.items():
            for low, high in intervals:
                if low > high:
                    raise ValueError(
                        f"diagnostics.bands.{metric}: interval ({low}, {high}) has low > high"
                    )
        if self.remove_contaminated and not self.eval_data_dir:
            raise ValueError("diagnostics.remove_contaminated needs diagnostics.eval_data_dir")
        return self
