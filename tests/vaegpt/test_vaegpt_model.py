"""VAEGPT-Sim network: shapes, the W/e^(i+1) noise schedule, batch norm over real tokens, the loss, save/load."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from cseaug.devices import resolve_precision  # noqa: E402
from cseaug.errors import ConfigError  # noqa: E402
from cseaug.vaegpt.config import LossConfig  # noqa: E402
from cseaug.vaegpt.generate import load_tokenizer  # noqa: E402
from cseaug.vaegpt.layout import pair_batch  # noqa: E402
from cseaug.vaegpt.loss import (  # noqa: E402
    FrozenJudge,
    gumbel_softmax_embeddings,
    pool,
    vaegpt_loss,
)
from cseaug.vaegpt.model import (  # noqa: E402
    LATENTS_FILE,
    SETTINGS_FILE,
    LatentLayer,
    VAEGPTSim,
    VAEGPTSimSettings,
)
from cseaug.vaegpt.train import loss_on_batch  # noqa: E402
from tests.vaegpt.toy_pairs import TOY_PAIRS  # noqa: E402


@pytest.fixture
def model(tiny_gpt2: Path) -> VAEGPTSim:
    torch.manual_seed(0)
    return VAEGPTSim.from_pretrained(tiny_gpt2)


@pytest.fixture
def tokenizer(tiny_gpt2: Path):
    return load_tokenizer(tiny_gpt2)


def test_layout_puts_every_target_at_the_same_column(tokenizer) -> None:
    batch = pair_batch(tokenizer, TOY_PAIRS[:3], "<|endoftext|>", 64, 64)
    eos = tokenizer.eos_token_id
    width = batch.source_width
    # the column before the target is the separator in every row, the sources are left-padded
    assert (batch.input_ids[:, width - 1] == eos).all()
    assert (batch.attention_mask[:, width - 1] == 1).all()
    assert torch.equal(batch.input_ids[:, width:], batch.target_ids)
    first_real = batch.attention_mask.argmax(dim=1)
    assert (batch.position_ids[torch.arange(3), first_real] == 0).all()
    lengths = batch.target_mask.sum(1)
    for row, length in enumerate(lengths.tolist()):
        assert batch.target_ids[row, length - 1] == eos
    assert batch.target_positions.tolist() == list(
        range(width - 1, width - 1 + batch.target_ids.shape[1])
    )


def test_shapes_and_kl(model: VAEGPTSim, tokenizer) -> None:
    batch = pair_batch(tokenizer, TOY_PAIRS[:4], "<|endoftext|>", 64, 64)
    model.train()
    out = model(
        batch.input_ids,
        batch.attention_mask,
        batch.position_ids,
        logits_to_keep=batch.target_positions,
    )
    assert out.logits.shape == (*batch.target_ids.shape, model.lm.config.vocab_size)
    assert out.kl.ndim == 0 and out.kl.item() > 0
    assert all(layer.kl is None and layer.real_tokens is None for layer in model.latents)
    assert len(model.latents) == model.lm.config.n_layer


def test_noise_schedule_adds_latent_times_w_over_e_power(model: VAEGPTSim, tokenizer) -> None:
    scales = model.noise_scales.tolist()
    assert scales == pytest.approx(
        [0.1 / math.e ** (i + 1) for i in range(model.lm.config.n_layer)]
    )
    assert scales[0] / scales[1] == pytest.approx(math.e)

    raw, noisy, latents = {}, {}, {}
    handles = []
    for i, block in enumerate(model.lm.transformer.h):
        handles.append(
            block.register_forward_hook(
                lambda m, a, o, i=i: raw.__setitem__(i, o.clone()), prepend=True
            )
        )
        handles.append(
            block.register_forward_hook(lambda m, a, o, i=i: noisy.__setitem__(i, o.clone()))
        )
        handles.append(
            model.latents[i].register_forward_hook(
                lambda m, a, o, i=i: latents.__setitem__(i, o.clone())
            )
        )
    batch = pair_batch(tokenizer, TOY_PAIRS[:2], "<|endoftext|>", 64, 64)
    model.eval()
    with torch.no_grad():
        model(batch.input_ids, batch.attention_mask, batch.position_ids)
    for handle in handles:
        handle.remove()
    for i, scale in enumerate(scales):
        assert latents[i].abs().sum() > 0
        torch.testing.assert_close(noisy[i], raw[i] + latents[i] * scale)


def test_batch_norm_statistics_ignore_padding() -> None:
    layer = LatentLayer(hidden_size=8, dropout=0.0, mean_bn_scale=0.5).train()
    hidden = torch.randn(2, 5, 8)
    layer.real_tokens = torch.tensor([0, 1, 2, 5, 6])
    outputs = []
    for pad_value in (0.0, 1000.0):
        changed = hidden.clone().view(-1, 8)
        changed[[3, 4, 7, 8, 9]] = pad_value
        torch.manual_seed(1)
        outputs.append(layer(changed.view(2, 5, 8)).view(-1, 8)[layer.real_tokens])
    torch.testing.assert_close(outputs[0], outputs[1])


def test_pooling_by_hand() -> None:
    hidden = torch.tensor([[[1.0, 0.0], [3.0, 2.0], [9.0, 9.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert pool(hidden, mask, "mean").tolist() == [[2.0, 1.0]]
    assert pool(hidden, mask, "last").tolist() == [[3.0, 2.0]]


def test_loss_is_one_minus_cosine_plus_weighted_kl(
    model: VAEGPTSim, tiny_gpt2: Path, tokenizer
) -> None:
    judge = FrozenJudge.from_pretrained(str(tiny_gpt2))
    batch = pair_batch(tokenizer, TOY_PAIRS[:4], "<|endoftext|>", 64, 64)
    model.train()
    out = model(
        batch.input_ids,
        batch.attention_mask,
        batch.position_ids,
        logits_to_keep=batch.target_positions,
    )
    settings = LossConfig(kl_weight=1e-2)
    parts = vaegpt_loss(out.logits, out.kl, batch.target_ids, batch.target_mask, judge, settings)
    assert parts.total.item() == pytest.approx(1 - parts.cosine + 1e-2 * parts.kl, rel=1e-5)
    parts.total.backward()
    assert all(p.grad is None for p in judge.parameters())
    assert model.lm.transformer.h[0].attn.c_attn.weight.grad is not None
    assert model.latents[0].mean.weight.grad is not None
    judge.train()
    assert not judge.encoder.training


def test_judge_scores_a_perfect_hard_sample_as_identical(tiny_gpt2: Path, tokenizer) -> None:
    judge = FrozenJudge.from_pretrained(str(tiny_gpt2))
    batch = pair_batch(tokenizer, TOY_PAIRS[:3], "<|endoftext|>", 64, 64)
    # logits that make the target tokens certain: every hard sample is the target
    logits = torch.nn.functional.one_hot(batch.target_ids, judge.encoder.config.vocab_size) * 1e4
    with torch.no_grad():
        embeds = gumbel_softmax_embeddings(logits.float(), judge.embedding_table)
        predicted = judge.embed(batch.target_mask, inputs_embeds=embeds)
        target = judge.embed(batch.target_mask, input_ids=batch.target_ids)
    torch.testing.assert_close(predicted, target, rtol=1e-4, atol=1e-5)


def reference_loss(logits, kl, target_ids, target_mask, judge, settings):
    """The loss as written before the fused path: F.gumbel_softmax, then sample @ table."""
    sample = torch.nn.functional.gumbel_softmax(
        logits.float(), tau=settings.gumbel_tau, hard=settings.gumbel_hard, dim=-1
    )
    table = judge.encoder.get_input_embeddings().weight
    predicted = judge.embed(target_mask, inputs_embeds=sample.to(table.dtype) @ table)
    with torch.no_grad():
        target = judge.embed(target_mask, input_ids=target_ids)
    cosine = torch.nn.functional.cosine_similarity(predicted.float(), target.float(), dim=-1)
    return 1.0 - cosine.mean() + settings.kl_weight * kl


@pytest.mark.parametrize(("hard", "tau"), [(True, 1.0), (False, 1.0), (True, 0.5)])
def test_the_fused_loss_gives_the_same_loss_and_gradients_as_gumbel_softmax_then_matmul(
    model: VAEGPTSim, tiny_gpt2: Path, tokenizer, hard: bool, tau: float
) -> None:
    judge = FrozenJudge.from_pretrained(str(tiny_gpt2))
    batch = pair_batch(tokenizer, TOY_PAIRS[:4], "<|endoftext|>", 64, 64)
    settings = LossConfig(kl_weight=1e-2, gumbel_tau=tau, gumbel_hard=hard)
    model.eval()  # no dropout: both passes see the same network

    def gradients(loss_function) -> tuple[float, list]:
        model.zero_grad(set_to_none=True)
        torch.manual_seed(7)  # the latents' noise and the Gumbel noise
        out = model(
            batch.input_ids, batch.attention_mask, batch.position_ids, batch.target_positions
        )
        total = loss_function(
            out.logits, out.kl, batch.target_ids, batch.target_mask, judge, settings
        )
        total.backward()
        return total.item(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    fused_loss, fused = gradients(lambda *args: vaegpt_loss(*args).total)
    reference, expected = gradients(reference_loss)
    assert fused_loss == pytest.approx(reference, rel=1e-6)
    assert len(fused) == len(expected) > 10
    for got, want in zip(fused, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-7)


def test_the_fused_sample_refuses_a_table_that_would_need_gradients() -> None:
    table = torch.randn(10, 4, requires_grad=True)
    with pytest.raises(ValueError, match="freeze"):
        gumbel_softmax_embeddings(torch.randn(2, 3, 10), table)


def test_lm_weight_adds_cross_entropy(model: VAEGPTSim, tiny_gpt2: Path, tokenizer) -> None:
    judge = FrozenJudge.from_pretrained(str(tiny_gpt2))
    batch = pair_batch(tokenizer, TOY_PAIRS[:2], "<|endoftext|>", 64, 64)
    model.eval()
    with torch.no_grad():
        out = model(
            batch.input_ids,
            batch.attention_mask,
            batch.position_ids,
            logits_to_keep=batch.target_positions,
        )
        parts = vaegpt_loss(
            out.logits,
            out.kl,
            batch.target_ids,
            batch.target_mask,
            judge,
            LossConfig(lm_weight=0.5),
        )
    assert parts.lm > 0
    assert parts.total.item() == pytest.approx(
        1 - parts.cosine + 1e-4 * parts.kl + 0.5 * parts.lm, rel=1e-5
    )


def test_a_few_steps_lower_the_loss_on_toy_pairs(
    model: VAEGPTSim, tiny_gpt2: Path, tokenizer
) -> None:
    judge = FrozenJudge.from_pretrained(str(tiny_gpt2))
    batch = pair_batch(tokenizer, TOY_PAIRS, "<|endoftext|>", 64, 64)
    settings = LossConfig()
    precision = "float32"

    def measured() -> float:
        model.eval()
        with torch.random.fork_rng(), torch.no_grad():
            torch.manual_seed(123)
            return float(loss_on_batch(model, judge, batch, settings, precision).total)

    before = measured()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    torch.manual_seed(0)
    for _ in range(8):
        model.train()
        optimizer.zero_grad()
        loss_on_batch(model, judge, batch, settings, precision).total.backward()
        optimizer.step()
    after = measured()
    assert after < before - 0.05, (before, after)


def test_bfloat16_autocast_on_cpu_gives_a_finite_loss(
    model: VAEGPTSim, tiny_gpt2: Path, tokenizer
) -> None:
    precision = resolve_precision("bfloat16", "cpu")
    # as training keeps it: the frozen judge in the training precision
    judge = FrozenJudge.from_pretrained(str(tiny_gpt2)).to(dtype=getattr(torch, precision))
    assert judge.embedding_table.dtype is torch.bfloat16
    model.train()
    parts = loss_on_batch(
        model,
        judge,
        pair_batch(tokenizer, TOY_PAIRS[:4], "<|endoftext|>", 64, 64),
        LossConfig(),
        precision,
    )
    parts.total.backward()
    assert math.isfinite(parts.total.item())
    assert model.lm.transformer.h[0].attn.c_attn.weight.grad.isfinite().all()
    with pytest.raises(ConfigError, match="float16 needs a GPU"):
        resolve_precision("float16", "cpu")


def test_save_and_load_round_trip(model: VAEGPTSim, tokenizer, tmp_path: Path) -> None:
    model.train()
    batch = pair_batch(tokenizer, TOY_PAIRS[:4], "<|endoftext|>", 64, 64)
    model(
        batch.input_ids, batch.attention_mask, batch.position_ids
    )  # moves the batch-norm running statistics
    saved = model.save_pretrained(tmp_path / "gen", tokenizer)
    assert (
        (saved / LATENTS_FILE).is_file()
        and (saved / SETTINGS_FILE).is_file()
        and (saved / "config.json").is_file()
    )
    loaded = VAEGPTSim.from_pretrained(saved)
    assert loaded.settings == model.settings
    for (name, a), b in zip(model.state_dict().items(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    # the GPT-2 part stays a plain GPT-2 checkpoint
    plain = transformers.GPT2LMHeadModel.from_pretrained(saved)
    assert torch.equal(plain.lm_head.weight, model.lm.lm_head.weight)
    with pytest.raises(ConfigError, match="settings cannot be replaced"):
        VAEGPTSim.from_pretrained(saved, VAEGPTSimSettings(latent_weight=0.5))


def test_settings_from_a_base_checkpoint(tiny_gpt2: Path) -> None:
    model = VAEGPTSim.from_pretrained(tiny_gpt2, VAEGPTSimSettings(latent_weight=0.5))
    assert model.settings.base_model == str(tiny_gpt2)
    assert model.noise_scales[0].item() == pytest.approx(0.5 / math.e)
