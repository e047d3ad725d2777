"""The trainer stage: train a sentence encoder on a published dataset version.

It reads only a version's ``manifest.json`` and ``data/*.parquet`` (through
:mod:`cseaug.dataset.versions` and :mod:`cseaug.dataset.reader`), never the build's
internals or caches, so it shows that the dataset contract is all a trainer needs.

* :mod:`.config`: ``TrainConfig`` (YAML, ``--set`` overrides);
* :mod:`.objectives`: which rows each paper trains on, and with which loss;
* :mod:`.data`: a version's rows -> the training sets of an objective;
* :mod:`.losses`: the papers' losses sentence-transformers does not have;
* :mod:`.heads`: the papers' sentence representations (MLP heads, PromptBERT's template,
  an evaluation pooling) as sentence-transformers modules, and the encoder they make;
* :mod:`.sampler`: Generate-CSE's per-epoch views, NGCSE's mixed batches;
* :mod:`.evaluation`: Spearman on STS12-16, STS-B, SICK-R before and after (SentEval's
  ``all`` / ``mean`` / ``wmean``), and the dev set;
* :mod:`.callbacks`: the progress bar over the steps, and the best dev checkpoint;
* :mod:`.card`: ``evaluation.json``, ``evaluation.md`` and the model card section;
* :mod:`.train`: :func:`~cseaug.trainer.train.train_encoder`, the whole run;
* :mod:`.seeds`: several seeds of one config, their mean ± std.
"""
