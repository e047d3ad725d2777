"""The VAEGPT-Sim training loss (section 3.1), ``L = 1 - mean_batch cos(V_predict, V_target)
+ W_KL * KL``: the frozen original GPT-2 (:class:`FrozenJudge`) embeds the Gumbel-softmax
sample of the target logits into V_predict (:func:`gumbel_softmax_embeddings`, docs/gpu.md)
and the real target into V_target (docs/vaegpt.md, "Training": the choices left open)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from cseaug.errors import require
from cseaug.vaegpt.config import LossConfig
from cseaug.vaegpt.layout import load_pretrained

torch = require("torch", "hf", "The VAEGPT-Sim generator")
nn = torch.nn
F = torch.nn.functional

Pooling = Literal["mean", "last"]


def pool(hidden: Any, mask: Any, how: Pooling) -> Any:
    """Sentence vectors from hidden states (batch, positions, width) over the real tokens."""
    mask = mask.to(hidden.dtype)
    if how == "mean":
        return (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
    last = (mask.sum(1).long() - 1).clamp(min=0)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


class FrozenJudge(nn.Module):
    """The discriminator: the original GPT-2 (a ``GPT2Model``), frozen, that embeds sentences
    by ``pooling`` its last hidden states."""

    def __init__(self, encoder: Any, pooling: Pooling = "mean") -> None:
        super().__init__()
        self.encoder = encoder
        self.pooling = pooling
        for parameter in self.encoder.parameters():
            parameter.requires_grad_(False)
        self.encoder.eval()

    def train(self, mode: bool = True) -> FrozenJudge:
        # a judge with dropout would give two different verdicts on one sentence
        return super().train(False)

    @classmethod
    def from_pretrained(cls, name_or_path: str, pooling: Pooling = "mean") -> FrozenJudge:
        """Load the original GPT-2 checkpoint (name or path) as the judge."""
        return cls(load_pretrained("GPT2Model", name_or_path, "the discriminator's GPT-2"), pooling)

    def embed(self, mask: Any, **inputs: Any) -> Any:
        """Vectors of right-padded ``input_ids`` (V_target) or ``inputs_embeds`` (batch,
        positions, width; V_predict, of a Gumbel-softmax sample)."""
        hidden = self.encoder(**inputs, attention_mask=mask).last_hidden_state
        return pool(hidden, mask, self.pooling)

    @property
    def embedding_table(self) -> Any:
        return self.encoder.get_input_embeddings().weight


class _GumbelSoftmaxEmbeddings(torch.autograd.Function):
    """``gumbel_softmax(logits) @ table`` with only the soft sample kept for backward."""

    @staticmethod
    def forward(ctx: Any, logits: Any, table: Any, tau: float, hard: bool) -> Any:
        # the noise of F.gumbel_softmax, drawn the same way, so one seed gives one sample
        noisy = torch.empty_like(logits, dtype=torch.float32).exponential_().log_().neg_()
        soft = noisy.add_(logits).div_(tau).softmax(-1)
        ctx.save_for_backward(soft, table)
        ctx.tau = tau
        if hard:  # a one-hot row times the table is that row of the table
            return table[soft.argmax(-1)]
        return soft.to(table.dtype) @ table

    @staticmethod
    def backward(ctx: Any, grad_embeds: Any) -> tuple[Any, None, None, None]:
        soft, table = ctx.saved_tensors
        # d embeds / d sample: the table; straight-through, so hard and soft samples alike
        grad_sample = (grad_embeds.to(table.dtype) @ table.t()).float()
        # softmax backward: soft * (g - <g, soft>), then the 1 / tau of the temperature
        width = soft.shape[-1]
        dot = torch.bmm(grad_sample.view(-1, 1, width), soft.view(-1, width, 1))
        grad_sample.sub_(dot.view(*soft.shape[:-1], 1)).mul_(soft).div_(ctx.tau)
        return grad_sample, None, None, None


def gumbel_softmax_embeddings(logits: Any, table: Any, tau: float = 1.0, hard: bool = True) -> Any:
    """``F.gumbel_softmax(logits.float(), tau, hard) @ table`` in the table's dtype, in one
    autograd function that keeps only the soft sample for backward (same values and gradients
    to ``logits``; the table, which gets none, must be frozen)."""
    if table.requires_grad:
        raise ValueError(
            "gumbel_softmax_embeddings gives the embedding table no gradient: freeze it"
        )
    return _GumbelSoftmaxEmbeddings.apply(logits, table, tau, hard)


@dataclass
class LossParts:
    """The loss and its terms (detached floats except ``total``)."""

    total: Any
    kl: float
    lm: float
    cosine: float


def vaegpt_loss(
    logits: Any,
    kl: Any,
    target_ids: Any,
    target_mask: Any,
    judge: FrozenJudge,
    settings: LossConfig,
) -> LossParts:
    """The training loss of a batch from the generator's logits at the (right-padded) target
    positions and its KL term, with the config's ``loss`` section."""
    embeds = gumbel_softmax_embeddings(
        logits, judge.embedding_table, settings.gumbel_tau, settings.gumbel_hard
    )
    predicted = judge.embed(target_mask, inputs_embeds=embeds)
    with torch.inference_mode():
        target = judge.embed(target_mask, input_ids=target_ids)
    target = target.clone()  # a normal tensor: cosine_similarity saves it for backward
    cosine = F.cosine_similarity(predicted.float(), target.float(), dim=-1).mean()
    total = 1.0 - cosine + settings.kl_weight * kl
    lm = torch.zeros((), device=logits.device)
    if settings.lm_weight > 0:
        labels = target_ids.masked_fill(target_mask == 0, -100)
        lm = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100)
        total = total + settings.lm_weight * lm
    return LossParts(
        total=total,
        kl=float(kl.detach()),
        lm=float(lm.detach()),
        cosine=float(cosine.detach()),
    )
