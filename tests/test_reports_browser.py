"""Every HTML report opened in headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
which ``.ci/run`` installs where it can, through selenium): every image loads, nothing is wider
than the window, and the console shows no error. Without the browser the tests skip and say
what to install."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import lcbayes as lcb
from lcbayes.learn.report import write_html as write_learn_html

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install -e '.[dev]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="headless Chromium is absent: apt-get install chromium chromium-driver")

#: The window the reports must fit (a laptop screen).
WINDOW = (1280, 900)
#: The demo report as ``lcbayes demo`` writes it (committed in the repository).
DEMO = Path(__file__).resolve().parents[1] / "reports" / "demo.html"


@pytest.fixture(scope="module")
def browser():
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
def reports(tmp_path_factory, carcinoma, long_names_tree) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    comp = lcb.compare(carcinoma, classes=range(1, 5), methods="bic,bic_e,aic,icl,cs,vbem,ais",
                       restarts=3, ais_chains=4, ais_temperatures=200, ais_max_chains=4, seed=0)
    out = {"compare": comp.to_html(folder / "compare.html"),
           "learn": write_learn_html(lcb.learn_classes(carcinoma, seed=0),
                                     folder / "learn.html", "carcinoma.csv"),
           "learn --tree": write_learn_html(lcb.learn_tree(carcinoma, seed=0, time_limit=30),
                                            folder / "tree.html", "carcinoma.csv"),
           "demo": DEMO}
    out["learn --tree, long names"] = write_learn_html(long_names_tree,   # a wide path table
                                                        folder / "tree_long.html", "x.csv")
    with pytest.warns(UserWarning):   # so short a run mixes poorly, and says so
        rj = lcb.rjmcmc(carcinoma, max_classes=5, draws=300, warmup=100, chains=2, seed=0)
        out["rjmcmc"] = lcb.diagnostics(rj).to_html(folder / "rjmcmc.html")
    return {name: Path(path) for name, path in out.items()}


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
