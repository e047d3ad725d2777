"""One build in this process: its config, its run store, and the steps it owns.

A :class:`BuildRun` makes the steps of a build the first time they are needed (the plan
asks first, so that a model or endpoint that fails stops the build before any work) and
closes every one of them when it is closed, whether the build succeeded or failed: use it as
a context manager. Generated rows run ``[stage, quality, judge, *filters, mer]``, ``other``
rows ``[contamination, mer]`` (docs/architecture.md, rules 3 and 5). The LLM endpoints are
probed once per build (:func:`~cseaug.pipeline.stages.probe_llms`); the plan
(:class:`PlanRef`) carries what they reported to every other run of the build (a run made
of it in another process, a Dask or Ray worker: :meth:`BuildRun.from_plan`).

Example:
    from cseaug.config import load_config
    from cseaug.pipeline.plan import plan_build
    with BuildRun(load_config("configs/demo.yaml")) as run:
        plan = plan_build(run)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cseaug.config import RunConfig, config_fingerprint
from cseaug.config.fingerprint import measures_cs
from cseaug.dataset.protect import refuse_dataset_path
from cseaug.dataset.shards import RunStore
from cseaug.errors import InputError
from cseaug.hashing import json_sha256
from cseaug.pipeline.inputs import input_fingerprints
from cseaug.pipeline.stages import ServedModels
from cseaug.secrets import scrub_data
from cseaug.step import Step, StepResult, close_all, summed_usage
from cseaug.wallclock import Clock

if TYPE_CHECKING:
    import pyarrow as pa

    from cseaug.encoders.worker import EncoderWorker
    from cseaug.quality.rows import RowChecks

PLAN_FILE = "plan.json"
VIEW_BATCH = 64
"""Views handed to the encoder worker in one message as their answers arrive: the worker
embeds them a batch at a time rather than one sentence per forward pass."""


@dataclass(frozen=True)
class PlanRef:
    """What the plan step hands on: where the plan is, how many shards it has, the build's
    validated config and what its LLM endpoints reported when they were probed
    (:meth:`BuildRun.from_plan` opens the run of it anywhere, and probes nothing)."""

    path: str
    run_id: str
    shards: int
    config: RunConfig
    served: ServedModels
    cs_limit: int | None = None
    """The CS sample's :func:`~cseaug.diagnostics.views.cs_sample_limit` (None: every row)."""


def run_id(cfg: RunConfig, inputs: dict[str, Any]) -> str:
    """The run-store name of a build: same config over the same inputs (corpus, patterns,
    prompts, models: :func:`~cseaug.pipeline.inputs.input_fingerprints`), same store, so a rerun
    resumes it; a changed input gets a new store, so no stale shard is reused."""
    identity = {"config": config_fingerprint(cfg), "inputs": inputs}
    return f"{cfg.dataset_name}-{json_sha256(identity)[:12]}"


@dataclass(frozen=True)
class Plan:
    """What a plan step writes to ``plan.json``, in the file's order; ``corpus``: its
    ``name``, cleaning ``stats`` and files' ``sha256``; ``seconds``: the plan's."""

    run_id: str
    config: dict[str, Any]
    shards: int
    corpus: dict[str, Any]
    other_rows: int
    stage: dict[str, Any]
    seconds: dict[str, float]

    def write(self, path: str | Path) -> None:
        """Write the plan to ``path``, scrubbed of secrets."""
        text = json.dumps(scrub_data(asdict(self)), indent=2, default=str)
        Path(path).write_text(text, encoding="utf-8")


def read_plan(plan_path: str | Path) -> Plan:
    """The plan a plan step wrote.

    Raises:
        InputError: there is no plan at ``plan_path``.
    """
    path = Path(plan_path)
    if not path.is_file():
        raise InputError(f"run plan {path} not found; start the build again with `cseaug build`")
    return Plan(**json.loads(path.read_text(encoding="utf-8")))


class BuildRun:
    """The steps of one build, made once and closed once (see the module docstring).

    Args:
        cfg: the run config.
        store: the run store; default ``<work_dir>/runs/<dataset>-<fingerprint>`` (the work
            directory is ``output.root`` when it is local, :attr:`RunConfig.work_dir`).
        served: what the build's LLM endpoints reported when the preflight or the plan
            probed them; None: the run probes them when it makes its steps (:attr:`served`).
        clock: the build's wall-clock marks (:mod:`cseaug.wallclock`), which the plan and the
            publish step carry on; None: a clock of its own, with no mark yet.
    """

    def __init__(
        self,
        cfg: RunConfig,
        store: RunStore | None = None,
        served: ServedModels | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.cfg = cfg
        self.clock = clock or Clock()
        refuse_dataset_path(cfg.output.root, None, "output.root")
        if store is not None:
            self.store = store
        self._served = served
        self._owned: list[Step] = []
        self._view_steps: list[Step] = []
        self._other_steps: list[Step] = []
        self._quality: RowChecks | None = None
        self._checked: Step | None = None  # the per-row checks, else the stage
        self._judge: Step | None = None
        self.cs_limit: int | None = None
        """The CS sample's :func:`~cseaug.diagnostics.views.cs_sample_limit`, set by the plan."""
        self._encoder: EncoderWorker | None = None
        self._stream_views = False
        self._arrived: list[str] = []  # views streamed by the stage, not yet handed over
        self._closed = False

    @classmethod
    def from_plan(cls, plan: PlanRef) -> BuildRun:
        """The run of a plan made earlier (by this or another process), on the plan's
        validated config, run store and served models: nothing is read, validated or probed
        again."""
        run = cls(plan.config, RunStore(plan.config.work_dir, plan.run_id), plan.served)
        run.cs_limit = plan.cs_limit
        return run

    @cached_property
    def inputs(self) -> dict[str, Any]:
        """:func:`~cseaug.pipeline.inputs.input_fingerprints` of the config (the corpus's sha256
        among them), hashed once, by the plan (a run of a plan has its :attr:`store`)."""
        return input_fingerprints(self.cfg)

    @cached_property
    def store(self) -> RunStore:
        """The run store, named by :func:`run_id` of the config and :attr:`inputs`."""
        return RunStore(self.cfg.work_dir, run_id(self.cfg, self.inputs))

    @property
    def plan_path(self) -> str:
        """Where the plan is (or will be) written, in the run store."""
        return str(self.store.path / PLAN_FILE)

    @property
    def served(self) -> ServedModels:
        """What the build's LLM endpoints reported: as the run was given it, else probed now,
        once (:func:`~cseaug.pipeline.stages.probe_llms`).

        Raises:
            BackendError: an API key is missing or an endpoint cannot answer for its model.
        """
        if self._served is None:
            from cseaug.pipeline.stages import probe_llms

            self._served = probe_llms(self.cfg)
        return self._served

    def __enter__(self) -> BuildRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def view_steps(self) -> list[Step]:
        """The steps of the sample's shards: ``[stage, quality, judge, *filters, mer]``."""
        self._make_steps()
        return self._view_steps

    def checked_rows(self, results: Sequence[StepResult]) -> pa.Table:
        """Of the results of :meth:`view_steps`, the rows the stage wrote and the per-row checks
        passed: an anchor missing from them is demoted to an ``other`` row (rows the filters
        after them drop are not kept at all)."""
        return results[self._view_steps.index(self._checked)].rows

    def other_steps(self) -> list[Step]:
        """The steps of ``other`` rows: ``[contamination, mer]`` (no stage, no pattern order)."""
        self._make_steps()
        return self._other_steps

    def start_encoder(self, anchors: Sequence[str], stream_views: bool = False) -> None:
        """Start the diagnostics encoder in its worker process (:mod:`cseaug.encoders.worker`)
        and have it embed ``anchors`` (those of the CS sample) while the LLM works, when the
        build measures CS (:func:`~cseaug.config.fingerprint.measures_cs`); the run closes it.
        With ``stream_views`` (every anchor is in the CS sample) the worker also gets each view
        as the stage writes it (an LLM stage: as its answer arrives)."""
        if self._closed:
            raise InputError(f"build run {self.store.path.name} is closed")
        if measures_cs(self.cfg) and self._encoder is None:
            from cseaug.encoders.worker import EncoderWorker

            cache = self.cfg.work_dir / "cache" / "embeddings"
            diagnostics = self.cfg.diagnostics
            self._encoder = EncoderWorker(
                diagnostics, cache if diagnostics.embedding_cache else None
            )
            self._encoder.prefetch(anchors)
            self._stream_views = stream_views

    def prefetch_anchors(self, anchors: Sequence[str]) -> None:
        """Have the per-row checks work out what they need of a shard's ``anchors`` while its
        LLM requests are in flight (:meth:`RowChecks.prefetch`)."""
        if self._quality is not None:
            self._quality.prefetch(anchors)

    def _take_view(self, text: str) -> None:
        """A view the stage just wrote, :data:`VIEW_BATCH` at a time: to the per-row checks
        (:meth:`RowChecks.prefetch`) and, when :meth:`start_encoder` asked for the views, to
        the encoder worker (a view of a row the per-row checks drop later is embedded for
        nothing, as the anchor of a failed row is)."""
        self._arrived.append(text)
        if len(self._arrived) < VIEW_BATCH:
            return
        arrived, self._arrived = self._arrived, []
        if self._quality is not None:
            self._quality.prefetch(arrived)
        if self._encoder is not None and self._stream_views:
            self._encoder.prefetch(arrived)

    def encoder(self) -> EncoderWorker | None:
        """The encoder worker of the CS step and the diagnostics (started now when the plan
        did not start one in this process: a shard on a cluster's worker, a rebuild whose
        shards were all finished); None when the build measures no CS."""
        if self._encoder is None:
            self.start_encoder([])
        return self._encoder

    def usage(self) -> dict[str, int]:
        """LLM token usage of generation: every step made so far but the judge."""
        return summed_usage([step.usage() for step in self._owned if step is not self._judge])

    def judge_usage(self) -> dict[str, int]:
        """LLM token usage of the judge so far (empty without one)."""
        return self._judge.usage() if self._judge is not None else {}

    def close(self) -> None:
        """Close every step made (last made first); the run cannot make steps again."""
        self._closed = True
        owned, self._owned = self._owned, []
        self._view_steps, self._other_steps = [], []
        self._quality = self._judge = self._checked = None
        encoder, self._encoder = self._encoder, None
        try:
            close_all(owned)
        finally:
            if encoder is not None:
                encoder.close()

    def _own(self, step: Step) -> Step:
        self._owned.append(step)
        return step

    def _make_steps(self) -> None:
        if self._closed:
            raise InputError(f"build run {self.store.path.name} is closed")
        if self._view_steps:
            return
        from cseaug.diagnostics.contamination import load_eval_index
        from cseaug.pipeline.cs import CSStep
        from cseaug.pipeline.filters import ContaminationFilter, PatternOrderFilter
        from cseaug.pipeline.mer import MERStep
        from cseaug.pipeline.stages import make_judge, make_stage
        from cseaug.quality.rows import RowChecks

        diag = self.cfg.diagnostics
        # Each step is owned as soon as it exists: a later one that fails to load leaves
        # the earlier ones to close().
        stage = self._own(make_stage(self.cfg, self.served, spent_by=self.store.path.name))
        stage.stream_views(self._take_view)
        quality = RowChecks.from_config(self.cfg)
        self._quality = quality if quality.checks else None
        self._checked = self._own(quality) if quality.checks else stage
        judge = make_judge(self.cfg, self.served, spent_by=self.store.path.name)
        if judge is not None:
            self._judge = self._own(judge)
        contamination: Step | None = None
        pattern_order: Step | None = None
        cs: Step | None = None
        if diag.remove_contaminated and diag.eval_data_dir:
            index = load_eval_index(diag.eval_data_dir)
            contamination = self._own(ContaminationFilter(index, diag.contamination_fields))
        if measures_cs(self.cfg):
            cs = CSStep(self.encoder, diag.seed, lambda: self.cs_limit)
        if diag.pattern_filter != "off":
            pattern_order = self._own(PatternOrderFilter(diag.pattern_filter))
        mer = self._own(MERStep())
        steps = (stage, self._quality, self._judge, contamination, cs, pattern_order, mer)
        self._view_steps = [step for step in steps if step is not None]
        self._other_steps = [step for step in (contamination, mer) if step is not None]
