"""VAEGPT-Sim generation end to end: a saved tiny generator, beam search with sampling, several candidates."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from cseaug.config import RunConfig, SynonymGenerationConfig  # noqa: E402
from cseaug.dataset.schema import CANONICAL_SCHEMA, row_id, rows_table  # noqa: E402
from cseaug.errors import ConfigError  # noqa: E402
from cseaug.pipeline.stages import make_generate_cse_stage  # noqa: E402
from cseaug.vaegpt.generate import VAEGPTSimGenerator, load_tokenizer  # noqa: E402
from cseaug.vaegpt.model import VAEGPTSim  # noqa: E402

SENTENCES = ["A man is playing a guitar", "Hi", "Two dogs are running through a field of flowers"]


@pytest.fixture(scope="module")
def generator_dir(tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    model = VAEGPTSim.from_pretrained(tiny_gpt2)
    return model.save_pretrained(tmp_path_factory.mktemp("generator"), load_tokenizer(tiny_gpt2))


def config(**changes) -> SynonymGenerationConfig:
    return SynonymGenerationConfig(max_new_tokens=6, batch_size=2, device="cpu", **changes)


def test_generates_candidates_per_sentence_in_input_order(generator_dir: Path) -> None:
    generator = VAEGPTSimGenerator.load(generator_dir, config())
    out = generator.generate(SENTENCES, num_return_sequences=3)
    assert [len(c) for c in out] == [3, 3, 3]
    assert all(isinstance(text, str) for candidates in out for text in candidates)
    # seeded per batch: the same sentences give the same candidates
    assert generator.generate(SENTENCES, num_return_sequences=3) == out
    assert VAEGPTSimGenerator.load(generator_dir, config(seed=1)).generate(SENTENCES, 3) != out


def test_more_candidates_than_beams_is_refused(generator_dir: Path) -> None:
    generator = VAEGPTSimGenerator.load(generator_dir, config())
    with pytest.raises(ConfigError, match="num_beams"):
        generator.generate(SENTENCES, num_return_sequences=4)


def test_a_directory_that_is_not_a_generator_is_refused(tiny_gpt2: Path) -> None:
    with pytest.raises(ConfigError, match="not a trained VAEGPT-Sim generator"):
        VAEGPTSimGenerator.load(tiny_gpt2)


def test_generate_cse_stage_uses_the_generator(generator_dir: Path) -> None:
    cfg = RunConfig.model_validate(
        {
            "name": "g",
            "method": "generate_cse",
            "corpus": {"path": "c.txt"},
            "generate_cse": {
                "generator": str(generator_dir),
                "views": 2,
                "probabilities": {"generator": 1.0},
                "generation": {"max_new_tokens": 6, "device": "cpu"},
            },
        }
    )
    stage = make_generate_cse_stage(cfg)
    rows = rows_table([{"id": row_id("c", s), "sentence": s, "split": "aigen"} for s in SENTENCES])
    result = stage(rows)
    identity = stage.manifest()["model"]["generate_cse"]["generator"]
    stage.close()
    assert set(identity["files_sha256"]) >= {"vaegpt_latents.safetensors", "vaegpt_sim.json"}
    assert identity["settings"]["latent_weight"] == 0.1 and identity["generation"]["num_beams"] == 3
    assert result.rows.schema.equals(CANONICAL_SCHEMA)
    assert result.rows.num_rows == len(SENTENCES)
    methods = [
        v["method"] for views in result.rows.column("augmentations").to_pylist() for v in views
    ]
    empty = result.rejects.num_rows
    # a random tiny model may answer with nothing but the end token: those views are redrawn
    assert methods.count("generator") == 2 * len(SENTENCES) - empty > 0
    assert set(result.rejects.column("reason").to_pylist()) <= {"empty_generation"}
