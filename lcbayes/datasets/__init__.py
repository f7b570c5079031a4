"""Classic small latent class data sets, shipped with lcbayes so that the examples run anywhere.

Each data set is stored as its published table of response patterns with counts (a
``count`` column; ``lcbayes/datasets/NAME.csv``) and expanded to one row per respondent, in
the table's order, when loaded. The tables are facts published in the sources cited; the same
tables ship with the R packages named in :data:`SETS`.

Example::

    import lcbayes as lcb
    lcb.datasets.names()                        # ('alzheimer', 'carcinoma', ...)
    data = lcb.datasets.load("carcinoma")       # a Dataset of the items
    frame = lcb.datasets.frame("cheating")      # every column, GPA included, NA kept
    print(lcb.datasets.info("carcinoma").source)
    lcb.datasets.write_csv("carcinoma", "carcinoma.csv")

On the command line: ``lcbayes datasets`` lists them and ``lcbayes datasets carcinoma --out
carcinoma.csv`` writes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ArgumentError

if TYPE_CHECKING:   # listing the data sets imports neither pandas nor the data layer
    import pandas as pd

    from ..data import Dataset

__all__ = ["SETS", "DatasetInfo", "frame", "info", "load", "names", "write_csv"]

#: The column of a stored table that holds each pattern's count.
COUNT = "count"


@dataclass(frozen=True)
class DatasetInfo:
    """What a data set is: ``rows`` respondents, ``columns`` (all, in order), ``items`` (the
    columns :func:`load` uses by default: the manifest items), ``description``, ``source``
    (the publication), ``licence`` and ``notes``."""

    name: str
    rows: int
    columns: tuple[str, ...]
    items: tuple[str, ...]
    description: str
    source: str
    licence: str
    notes: str = ""


def _published(r_package: str) -> str:
    return (f"counts published in the source (statistical facts, not a creative work); the same "
            f"table ships with the R package {r_package}")


#: Every data set, by name.
SETS: dict[str, DatasetInfo] = {info.name: info for info in (
    DatasetInfo(
        "alzheimer", 240,
        ("Hallucination", "Activity", "Aggression", "Agitation", "Diurnal", "Affective"),
        ("Hallucination", "Activity", "Aggression", "Agitation", "Diurnal", "Affective"),
        "six behavioural and psychological symptoms (0 absent, 1 present) of 240 patients "
        "with mild Alzheimer's disease",
        "Moran, M., Walsh, C., Lynch, A., Coen, R. F., Coakley, D. and Lawlor, B. A. (2004). "
        "Syndromes of behavioural and psychological symptoms in mild Alzheimer's disease. "
        "International Journal of Geriatric Psychiatry 19, 359-364",
        _published("BayesLCA (GPL >= 2) as Alzheimer")),
    DatasetInfo(
        "carcinoma", 118, tuple("ABCDEFG"), tuple("ABCDEFG"),
        "seven pathologists (A-G) rate 118 slides of the uterine cervix for carcinoma "
        "(1 no, 2 yes)",
        "Landis, J. R. and Koch, G. G. (1977). An application of hierarchical kappa-type "
        "statistics in the assessment of majority agreement among multiple observers. "
        "Biometrics 33, 363-374; Agresti, A. (2002). Categorical Data Analysis, 2nd ed., "
        "Table 13.1",
        _published("poLCA (GPL >= 2) as carcinoma"),
        "the classic latent class example: poLCA's maximum-likelihood fits are in "
        "the README"),
    DatasetInfo(
        "cheating", 319, ("LIEEXAM", "LIEPAPER", "FRAUD", "COPYEXAM", "GPA"),
        ("LIEEXAM", "LIEPAPER", "FRAUD", "COPYEXAM"),
        "319 undergraduates answer four questions on academic dishonesty (1 no, 2 yes: lied "
        "to avoid an exam, lied to avoid a term paper, bought a term paper, copied on an "
        "exam), with their grade point average in five groups (GPA, 1 lowest)",
        "Dayton, C. M. (1998). Latent Class Scaling Analysis. Sage",
        _published("poLCA (GPL >= 2) as cheating"),
        "GPA is a covariate, not an item: load() leaves it out unless columns name it; it is "
        "missing for 4 students"),
    DatasetInfo(
        "gss82", 1202, ("PURPOSE", "ACCURACY", "UNDERSTA", "COOPERAT"),
        ("PURPOSE", "ACCURACY", "UNDERSTA", "COOPERAT"),
        "1982 General Social Survey: 1202 respondents' attitudes toward surveys "
        "(purpose, accuracy, understanding, cooperation), text labels",
        "McCutcheon, A. L. (1987). Latent Class Analysis. Sage (from the 1982 General Social "
        "Survey)",
        _published("poLCA (GPL >= 2) as gss82")),
    DatasetInfo(
        "gss08", 355, ("DEFECT", "HLTH", "RAPE", "POOR", "SINGLE", "NOMORE", "AGE", "SEX",
                       "RACE", "DEGREE", "REGION"),
        ("DEFECT", "HLTH", "RAPE", "POOR", "SINGLE", "NOMORE"),
        "2008 General Social Survey: 355 respondents say whether legal abortion should be "
        "possible (YES/NO) for a birth defect, the mother's health, rape, a poor family, a "
        "single mother, no more children; with AGE, SEX, RACE, DEGREE (4 levels, glca's "
        "grouping variable) and REGION",
        "The General Social Survey 2008 (NORC at the University of Chicago); Kim, Y., Jeon, S., "
        "Chang, C. and Chung, H., glca: An R Package for Multiple-Group Latent Class Analysis",
        "the survey's data are public; the same extract ships with the R package glca (GPL-3) "
        "as gss08",
        "DEGREE is a grouping variable (lcb.em(..., group='DEGREE')); some items are missing, "
        "3 rows have every item missing"),
    DatasetInfo(
        "values", 216, tuple("ABCD"), tuple("ABCD"),
        "216 respondents choose between universalistic and particularistic values in four "
        "role-conflict situations (A-D, coded 1/2)",
        "Stouffer, S. A. and Toby, J. (1951). Role conflict and personality. American Journal "
        "of Sociology 56, 395-406; Goodman, L. A. (1974). Exploratory latent structure "
        "analysis using both identifiable and unidentifiable models. Biometrika 61, 215-231",
        _published("poLCA (GPL >= 2) as values")),
)}


def names() -> tuple[str, ...]:
    """The data sets' names, sorted."""
    return tuple(sorted(SETS))


def info(name: str) -> DatasetInfo:
    """What data set ``name`` is (:class:`DatasetInfo`)."""
    if name not in SETS:
        raise ArgumentError(f"no data set named {name!r}; the data sets are "
                            f"{', '.join(names())}")
    return SETS[name]


def frame(name: str) -> pd.DataFrame:
    """Data set ``name`` as a DataFrame: one row per respondent, every column, missing values
    as NaN, in the order of the published table."""
    import pandas as pd

    info(name)
    with resources.files(__name__).joinpath(f"{name}.csv").open("r", encoding="utf-8") as f:
        table = pd.read_csv(f)
    return table.loc[table.index.repeat(table.pop(COUNT))].reset_index(drop=True)


def load(name: str, columns: list[str] | tuple[str, ...] | None = None) -> Dataset:
    """Data set ``name`` as a :class:`~lcbayes.Dataset` of ``columns`` (default its items,
    :attr:`DatasetInfo.items`)."""
    from ..data import Dataset

    described = info(name)
    return Dataset.from_pandas(frame(name), columns=list(columns or described.items))


def write_csv(name: str, path: str | Path) -> Path:
    """Write data set ``name`` (every column, one row per respondent, missing values empty) as
    a CSV file at ``path``; returns the path."""
    from ..render import write_text

    return write_text(path, frame(name).to_csv(index=False))
