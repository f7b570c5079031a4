"""Every report is readable. Every figure's drawn text: no two labels overlap, none leaves the
figure, none is smaller than 6 points. Every HTML report opened in headless Chromium (Debian's
``chromium`` and ``chromium-driver``, which ``.ci/run`` installs where it can, through
selenium): every image loads, nothing is wider than the window, and the console shows no
error; without the browser those tests skip and say what to install (issue 30's figure
items). The results behind the reports are made once for both."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

import lcbayes as lcb
from lcbayes.comparison.figures import figures, label_points, new_figure
from lcbayes.learn.report import score_figure
from lcbayes.learn.report import write_html as write_learn_html
from lcbayes.learn.tree_drawing import profiles_figure, tree_figure

#: Smallest font size a figure may use, in points.
MIN_POINTS = 6.0


def drawn_texts(fig) -> list:
    """The text a draw of ``fig`` shows: titles, axis labels, the tick labels inside the view
    (of axes that show their axes), annotations, legends."""
    FigureCanvasAgg(fig).draw()
    out = list(fig.texts)
    for legend in fig.legends:
        out += [*legend.get_texts(), legend.get_title()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        out += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.get_legend() is not None:
            out += [*ax.get_legend().get_texts(), ax.get_legend().get_title()]
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                out += [axis.label, axis.offsetText]
                for tick in axis._update_ticks():
                    out += [tick.label1, tick.label2]
    unique = {id(t): t for t in out if t.get_visible() and t.get_text().strip()}
    return list(unique.values())


def text_problems(fig) -> list[str]:
    """Every overlapping pair of drawn texts, text outside the figure, and text below
    :data:`MIN_POINTS` points."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    boxes = [(t, t.get_window_extent(renderer)) for t in drawn_texts(fig)]
    found = []
    for text, box in boxes:
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            found.append(f"outside the figure: {text.get_text()!r}")
        if text.get_fontsize() < MIN_POINTS:
            found.append(f"{text.get_fontsize()} pt: {text.get_text()!r}")
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            overlap_x = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            overlap_y = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if overlap_x > 1 and overlap_y > 1:
                found.append(f"overlap: {a.get_text()!r} / {b.get_text()!r}")
    return found


def test_the_checker_finds_overlapping_and_clipped_labels():
    fig = new_figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.annotate("first label", (0.5, 0.5))
    ax.annotate("second label", (0.52, 0.5))
    ax.annotate("far out " * 10, (0.9, 0.9))
    ax.set_title("tiny", fontsize=4)
    problems = text_problems(fig)
    assert any(p.startswith("overlap: 'first label'") for p in problems)
    assert any(p.startswith("outside the figure: 'far out") for p in problems)
    assert "4.0 pt: 'tiny'" in problems


def test_point_labels_never_overlap_or_leave_the_axes():
    rng = np.random.default_rng(0)
    fig = new_figure(figsize=(5, 3), layout="constrained")
    ax = fig.subplots()
    x, y = rng.uniform(0, 10, 60), rng.uniform(0, 1, 60)
    ax.scatter(x, y)
    labels = [f"H{i}:2(A,B,C,D)" if i % 3 else str(i) for i in range(60)]
    placed = label_points(ax, x, y, labels, fontsize=7)
    assert 0 < placed < 60
    assert text_problems(fig) == []


@pytest.fixture(scope="module")
def results(carcinoma, long_names_tree) -> dict:
    """The results behind every report, made once for the figure and browser tests."""
    with pytest.warns(UserWarning):   # so short a run mixes poorly, and says so
        rj = lcb.rjmcmc(carcinoma, max_classes=5, draws=300, warmup=100, chains=2, seed=0)
        diagnostics = lcb.diagnostics(rj)
    return {"compare": lcb.compare(carcinoma, n_classes=range(1, 5),
                                   methods="bic,bic_e,aic,icl,cs,vbem,ais", restarts=3,
                                   engine_options={"ais": {"chains": 4, "temperatures": 200,
                                                           "max_chains": 4}}, seed=0),
            "learn": lcb.learn_classes(carcinoma, seed=0),
            "tree": lcb.learn_tree(carcinoma, seed=0, time_limit=30),
            "tree, long names": long_names_tree, "rjmcmc": diagnostics}


@pytest.fixture(scope="module")
def carcinoma_figures(results) -> dict:
    found = {f"compare {k}": v for k, v in figures(results["compare"]).items()}
    found["learn score"] = score_figure(results["learn"])
    tree, long_names = results["tree"], results["tree, long names"]
    found["tree score"] = score_figure(tree)
    found["tree drawing"] = tree_figure(tree.structure)
    found["tree profiles"] = profiles_figure(tree.structure, tree.fit.params)
    found["tree score, long names"] = score_figure(long_names)
    found["tree drawing, long names"] = tree_figure(long_names.structure)
    found.update({f"rjmcmc {k}": v for k, v in results["rjmcmc"].figures().items()})
    return found


def test_every_report_figure_has_readable_text(carcinoma_figures):
    assert {"compare scores", "compare ais_traces", "learn score", "tree drawing",
            "rjmcmc rank", "rjmcmc posterior_k"} <= set(carcinoma_figures)
    problems = {name: text_problems(fig) for name, fig in carcinoma_figures.items()}
    assert {name: p for name, p in problems.items() if p} == {}


# ---------------------------------------------------------------------- in a browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
NO_BROWSER = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None or importlib.util.find_spec("selenium") is None,
    reason="headless Chromium or selenium is absent: apt-get install chromium "
           "chromium-driver; pip install -e '.[dev]'")

#: The window the reports must fit (a laptop screen).
WINDOW = (1280, 900)
#: The demo report as ``lcbayes demo`` writes it (committed in the repository).
DEMO = Path(__file__).resolve().parents[1] / "reports" / "demo.html"


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def reports(tmp_path_factory, results) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    out = {"compare": results["compare"].to_html(folder / "compare.html"),
           "learn": write_learn_html(results["learn"], folder / "learn.html", "carcinoma.csv"),
           "learn --tree": write_learn_html(results["tree"], folder / "tree.html",
                                            "carcinoma.csv"),
           "learn --tree, long names": write_learn_html(results["tree, long names"],
                                                        folder / "tree_long.html", "x.csv"),
           "rjmcmc": results["rjmcmc"].to_html(folder / "rjmcmc.html"), "demo": DEMO}
    return {name: Path(path) for name, path in out.items()}


@NO_BROWSER
@pytest.mark.parametrize("name", ["compare", "learn", "learn --tree", "learn --tree, long names",
                                  "rjmcmc", "demo"])
def test_a_report_shows_every_image_fits_the_window_and_logs_no_error(browser, reports, name):
    browser.get_log("browser")   # drop what earlier pages logged
    browser.get(reports[name].resolve().as_uri())
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt]);")
    assert images and all(done and width > 0 for done, width, _ in images), images
    page, window = browser.execute_script(
        "return [document.documentElement.scrollWidth, window.innerWidth];")
    assert page <= window, f"{name}: the page is {page} px wide in a {window} px window"
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
