"""What ``cseaug data fetch`` can download: one :class:`Entry` per download of the shipped
configs' public inputs, with its provenance (docs/data.md lists them and how each checksum
is known).

Example:
    >>> [e.name for e in select(["sick", "mrpc-train"])]
    ['sick', 'mrpc-train']
    >>> source_urls(select(["sick"])[0], mirror="http://10.0.0.5/data")
    ['http://10.0.0.5/data/SICK.txt']
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cseaug.errors import ConfigError
from cseaug.fetch import senteval_sums
from cseaug.hub import hub_endpoint, hub_offline

HF_ENDPOINT_PLACEHOLDER = "{HF_ENDPOINT}"
MIRROR_ENV = "CSEAUG_DATA_MIRROR"

_SIMCSE_HUB = f"{HF_ENDPOINT_PLACEHOLDER}/datasets/princeton-nlp/datasets-for-simcse/resolve/main"
_RAW = "https://raw.githubusercontent.com"
_SYNWMD = f"{_RAW}/amao0o0/SynWMD/59042a92e862db58bd01e47914345d2f52d2a4a3"
_SIMCSE_PT = f"{_RAW}/robertoviegas/SimCSE/a0d98a537ceffe5f728077dd0930c41171db2d16"
_SICK_REPO = f"{_RAW}/kkalouli/SICK-processing/0848f4aec60870122a4ca18de08ba0e25f6f9a75"
_MRPC_REPO = f"{_RAW}/Pzeyang/Paraphrase_Identification/6239499b4336487deb67936be09d43a25b4d3f37"
_MRPC_MIRROR = f"{_RAW}/Pzeyang/cse701-project/807860e529d48bca874b259a9e3541e387be6324"
_SENTEVAL_STS = f"{_SYNWMD}/data/downstream/STS"
_SICK_SPLITS_REPO = f"{_RAW}/a389965626/Sick-/1c9d2289d3b36ec71592e51828257e7a81b48028"

_WIKI_CONFIGS = tuple(
    f"configs/{name}.yaml"
    for name in ("wiki-sts", "wiki-nli", "wiki-ski", "wiki-osscse", "generate-cse")
)
_TRAIN_CONFIGS = tuple(
    f"configs/train/{name}.yaml"
    for name in ("simcse-unsup", "simcse-sup", "ngcse", "ngcse-wiki-sts-ht-final",
                 "ngcse-nli-sts-ht-final", "osscse", "skicse-unsup", "skicse-sup", "generate-cse")
)  # fmt: skip
_NLI_CONFIGS = tuple(
    f"configs/{name}.yaml" for name in ("wiki-nli", "nli-sts", "nli-nli", "nli-ski")
)


@dataclass(frozen=True)
class Member:
    """One file of an archive (``name``: its path inside) or of a folder entry, with its
    ``target`` (relative to the data directory, POSIX separators) and ``sha256``."""

    name: str
    target: str
    sha256: str


@dataclass(frozen=True)
class Entry:
    """One download of the catalogue: byte-identical ``urls`` tried in order, ``filename``
    under a mirror, ``sha256`` None when none is published (trusted on first use). A plain
    file has a ``target``, an archive ``members``, a folder entry ``files`` (from
    ``<url>/<name>``)."""

    name: str
    description: str
    configs: tuple[str, ...]
    urls: tuple[str, ...]
    filename: str
    sha256: str | None
    licence: str
    terms: str
    size: str
    target: str | None = None
    members: tuple[Member, ...] = ()
    files: tuple[Member, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        """Every path this entry puts under the data directory."""
        if self.target:
            return (self.target,)
        return tuple(m.target for m in self.members + self.files)

    @property
    def is_archive(self) -> bool:
        return bool(self.members)

    @property
    def is_folder(self) -> bool:
        """Whether the entry is a folder of files downloaded one by one (``files``)."""
        return bool(self.files)


def _sts12_members() -> tuple[Member, ...]:
    # The organisers' readme carries the licence terms; the evaluation script and the sample
    # system output in the archive are not data and stay out.
    sums = {
        "00-readme.txt": "bc0641542694710006cb02f7e5975ada74cfeb83ff9f0f72cb5b1a6aa35fdca6",
        "STS.input.MSRpar.txt": "53b13f0ff68162a4f49051835b4e6ef91111f8dd3e8ffcae5eafd8db70384f90",
        "STS.gs.MSRpar.txt": "8c21613b5416fb45f19434028eb35015165357d0d0d8518c755e44af206f6892",
        "STS.input.MSRvid.txt": "06e8689cf0eba38a45475021bd50be3d06c543304533eeac526f9b58ce91fc29",
        "STS.gs.MSRvid.txt": "00d4118c99db24ec70d84c61aefdd0b7c91a7961ddab0cecdbde3d48d6a750a6",
        "STS.input.SMTeuroparl.txt": "d4751dc01a1e2f3f2044bc3e84a5f669cf0665411c5966e65f9d8bbd499ad41b",
        "STS.gs.SMTeuroparl.txt": "b679e8b839a7d7e13ac36d66b06debd6a3abdc4fb4261db7b0958b758db935e8",
    }
    return tuple(
        Member(f"STS2012-train/{name}", f"sts12_train/{name}", sha) for name, sha in sums.items()
    )


def _mrpc_entry(
    split: str, pairs: str, sha256: str, size: str = "1.0 MB", mirrors: tuple[str, ...] = ()
) -> Entry:
    filename = f"msr_paraphrase_{split}.txt"
    return Entry(
        name=f"mrpc-{split}",
        description=f"Microsoft Research Paraphrase Corpus, {split} split ({pairs} pairs)",
        configs=("configs/vaegpt/train.yaml",),
        urls=tuple(f"{repo}/{filename}" for repo in (_MRPC_REPO, *mirrors)),
        filename=filename,
        sha256=sha256,
        licence="MSR Paraphrase Corpus licence (research use)",
        terms="Microsoft Research's licence of the corpus (Dolan et al., 2004)",
        size=size,
        target=f"mrpc/{filename}",
    )


def _folder_entry(
    name: str,
    description: str,
    base: str,
    target: str,
    sums: dict[str, str],
    configs: tuple[str, ...] = _TRAIN_CONFIGS,
    **about: str,
) -> Entry:
    """A folder entry: every file of ``sums`` from ``<base>/<file>`` to ``<target>/<file>``."""
    folder = target.rsplit("/", 1)[-1]
    return Entry(
        name=name,
        description=description,
        configs=configs,
        urls=(base,),
        filename=folder,
        sha256=None,
        files=tuple(Member(file, f"{target}/{file}", sha) for file, sha in sums.items()),
        **about,
    )


_STS_TERMS = (
    "each subset's licence is in the readme / LICENSE files fetched with it (e.g. the Stack "
    "Exchange subsets: CC BY-SA); SentEval's get_transfer_data.bash copies of the organisers' "
    "releases"
)


def _sts_year_entry(year: int, subsets: str, pairs: str, size: str) -> Entry:
    folder = f"STS{year}-en-test"
    return _folder_entry(
        f"sts{year}-test",
        f"SemEval-20{year} STS test set in SentEval's layout ({subsets}; {pairs} scored pairs)",
        f"{_SENTEVAL_STS}/{folder}",
        f"senteval_sts/{folder}",
        getattr(senteval_sums, f"STS{year}"),
        licence="SemEval STS terms (research use)",
        terms=_STS_TERMS,
        size=size,
    )


EVALUATION_ENTRIES: tuple[Entry, ...] = (
    _sts_year_entry(12, "MSRpar, MSRvid, SMTeuroparl, OnWN, SMTnews", "3,108", "431 kB"),
    _sts_year_entry(13, "FNWN, headlines, OnWN; no SMT, as SentEval", "1,500", "179 kB"),
    _sts_year_entry(14, "deft-forum, deft-news, headlines, images, OnWN, tweet-news", "3,750", "436 kB"),
    _sts_year_entry(15, "answers-forums, answers-students, belief, headlines, images", "3,000", "1.1 MB"),
    _sts_year_entry(16, "answer-answer, headlines, plagiarism, postediting, question-question", "1,186", "1.5 MB"),
    _folder_entry(
        "stsb",
        "STS Benchmark in SentEval's layout: sts-train/dev/test.csv (5,749 / 1,500 / 1,379 pairs)",
        f"{_SENTEVAL_STS}/STSBenchmark",
        "senteval_sts/STSBenchmark",
        senteval_sums.STSB,
        licence="STS Benchmark terms (the SemEval 2012-2017 subsets' licences)",
        terms="the LICENSE.txt fetched with it: the union of the SemEval STS subset licences, "
        "mostly research use, some parts CC BY-SA",
        size="1.4 MB",
    ),
    _folder_entry(
        "sick-splits",
        "SICK's SemEval-2014 split files (train 4,500, trial 500, test 4,927 pairs): SentEval's "
        "SICK-R test set and the SICK-R dev set",
        _SICK_SPLITS_REPO,
        "sick/semeval2014_splits_noheader",
        senteval_sums.SICK_SPLITS,
        tuple(c for c in _TRAIN_CONFIGS if c != "configs/train/generate-cse.yaml"),  # no SICK
        licence="CC BY-NC-SA 3.0",
        terms="the licence its creators (Marelli et al., 2014) released SICK under",
        size="1.1 MB",
    ),
)  # fmt: skip
"""The trainer's evaluation sets (``evaluation.data_dir``), in SentEval's layout."""


CATALOG: tuple[Entry, ...] = (
    Entry(
        name="wiki1m",
        description="SimCSE's one million English Wikipedia sentences, one per line",
        configs=_WIKI_CONFIGS,
        urls=(f"{_SIMCSE_HUB}/wiki1m_for_simcse.txt",),
        filename="wiki1m_for_simcse.txt",
        sha256=None,
        licence="CC BY-SA 3.0 / GFDL",
        terms="Wikipedia's licences for its text; sampled by the SimCSE authors (Gao et al., "
        "2021) and distributed in the hub dataset princeton-nlp/datasets-for-simcse",
        size="~120 MB",
        target="wiki1m_for_simcse.txt",
    ),
    Entry(
        name="nli",
        description="SimCSE's NLI triples (sent0, sent1, hard_neg) from SNLI and MultiNLI",
        configs=_NLI_CONFIGS,
        urls=(f"{_SIMCSE_HUB}/nli_for_simcse.csv",),
        filename="nli_for_simcse.csv",
        sha256=None,
        licence="CC BY-SA 4.0 (SNLI); OANC terms, CC BY(-SA) 3.0 (MultiNLI)",
        terms="built by the SimCSE authors from SNLI (Bowman et al., 2015) and MultiNLI "
        "(Williams et al., 2018), whose terms apply; distributed in "
        "princeton-nlp/datasets-for-simcse",
        size="~40 MB",
        target="nli_for_simcse.csv",
    ),
    Entry(
        name="sts12-train",
        description="SemEval-2012 STS train split: MSRpar, MSRvid, SMTeuroparl (2,234 scored pairs)",
        configs=("configs/wiki-sts.yaml", "configs/nli-sts.yaml"),
        urls=(
            f"{_SYNWMD}/data/downstream/STS/STS14-en-test/sts2012-train.tgz",
            f"{_SIMCSE_PT}/SentEval/data/downstream/STS/STS14-en-test/sts2012-train.tgz",
        ),
        filename="sts2012-train.tgz",
        sha256="e69558075f17af014ae0f06822aa69f9814b59af2e7b3e78d9992669be8f2603",
        licence="SemEval-2012 STS terms (research use)",
        terms="the SemEval-2012 Task 6 readme, extracted as sts12_train/00-readme.txt, requires "
        "Microsoft Research's licences of the MSR Paraphrase and MSR Video corpora",
        size="126 kB",
        members=_sts12_members(),
    ),
    Entry(
        name="sick",
        description="SICK: 9,840 sentence pairs with relatedness scores and entailment labels",
        configs=("configs/vaegpt/train.yaml",),
        urls=(f"{_SICK_REPO}/SICK.txt",),
        filename="SICK.txt",
        sha256="1539c2d059809b5bd40694e26d8121cc85b6b496f91c7b40f2fc83bbd7dcd957",
        licence="CC BY-NC-SA 3.0",
        terms="the licence its creators (Marelli et al., 2014) released it under",
        size="2.4 MB",
        target="sick/SICK.txt",
    ),
    _mrpc_entry(
        "train", "4,076", "f3d26d73bb3510032f80836e2e81cf32c71863f8dd6151aa80a125c2c799a557"
    ),
    _mrpc_entry(
        "test",
        "1,725",
        "51a1f197d8786712d2f0d97700f5be653b7488a96cde00e158159350d23e3d90",
        size="433 kB",
        mirrors=(_MRPC_MIRROR,),
    ),
    *EVALUATION_ENTRIES,
)
"""Every download ``cseaug data fetch`` knows, in the order it fetches them."""


def select(names: Iterable[str]) -> list[Entry]:
    """The entries called ``names`` (all when empty), in catalogue order; ConfigError with the
    closest name for an unknown one.

    Example:
        >>> [e.name for e in select([])][:2]
        ['wiki1m', 'nli']
    """
    wanted = list(dict.fromkeys(names))
    known = [entry.name for entry in CATALOG]
    for name in wanted:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise ConfigError(
                f"no dataset '{name}' in the catalogue; {hint}known: {', '.join(known)} "
                "(cseaug data fetch --list describes them)"
            )
    return [entry for entry in CATALOG if not wanted or entry.name in wanted]


def source_urls(
    entry: Entry, mirror: str | None = None, environ: Mapping[str, str] = os.environ
) -> list[str]:
    """The URLs to try for ``entry``: ``<mirror>/<filename>`` alone, or the catalogue's on
    ``HF_ENDPOINT``, hub URLs left out under ``HF_HUB_OFFLINE``.

    Example:
        >>> source_urls(select(["nli"])[0], environ={"HF_ENDPOINT": "https://hf-mirror.example/"})
        ['https://hf-mirror.example/datasets/princeton-nlp/datasets-for-simcse/resolve/main/nli_for_simcse.csv']
    """
    if mirror:
        return [f"{mirror.rstrip('/')}/{entry.filename}"]
    endpoint = hub_endpoint(environ)
    return [
        url.replace(HF_ENDPOINT_PLACEHOLDER, endpoint)
        for url in entry.urls
        if not (hub_offline(environ) and url.startswith(HF_ENDPOINT_PLACEHOLDER))
    ]
