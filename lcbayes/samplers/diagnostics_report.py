"""The HTML and Markdown forms of :class:`~.diagnostics.DiagnosticsResult`: the headline, any
mixing warning, the R-hat flags, the settings, the posterior of ``K``, the summary table after
relabelling (flagged rows highlighted), the figures and the versions."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from ..render import (
    data_uri,
    fmt,
    fmt_setting,
    html_document,
    html_figure,
    html_table,
    kv_table,
    md_table,
    versions,
    write_bytes,
    write_text,
)
from .plots import CAPTIONS

if TYPE_CHECKING:
    from .diagnostics import DiagnosticsResult

__all__ = ["COLUMNS", "diagnostics_html", "diagnostics_markdown"]

#: Columns of the summary table shown in the text, HTML and Markdown output.
COLUMNS = ["mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "ess_tail", "r_hat"]


def _rows(diag: DiagnosticsResult) -> list[tuple[str, list[str]]]:
    """``(parameter, formatted cells)`` of the summary table."""
    return [(name, [fmt(row[c], 0 if c.startswith("ess") else 3) for c in COLUMNS])
            for name, row in diag.table.iterrows()]


def diagnostics_html(diag: DiagnosticsResult, path: str | Path | None,
                     data_name: str | None) -> str:
    """:meth:`DiagnosticsResult.to_html`."""
    warning = diag.mixing_warning(data_name=data_name)
    parts = ["<section class='lcbayes-diagnostics'>", "<h2>Posterior diagnostics</h2>",
             f"<p class='note'>{html.escape(diag.headline())}</p>",
             *([f"<p><b>Warning</b>: {html.escape(warning)}</p>"] if warning else []),
             f"<p>{html.escape(diag.flag_text())}</p>", "<h3>Settings</h3>",
             kv_table(diag.settings_block(data_name=data_name), cell=str)]
    if diag.posterior_k is not None:
        parts += ["<h3>Posterior of the number of classes</h3>",
                  kv_table({f"K = {k}": p for k, p in diag.posterior_k.items()})]
    rows = _rows(diag)
    parts += ["<h3>Summary after relabelling</h3>",
              html_table(["parameter", *COLUMNS], [[name, *cells] for name, cells in rows],
                         row_classes=["flagged" if name in diag.flagged else ""
                                      for name, _ in rows])]
    parts += [html_figure(key, data, CAPTIONS[key])
              for key, data in diag.figure_pngs().items()]
    parts += ["<h3>Versions</h3>", kv_table(versions(), cell=fmt_setting), "</section>"]
    section = "\n".join(parts)
    if path is not None:
        write_text(path, html_document("lcbayes posterior diagnostics", section))
    return section


def diagnostics_markdown(diag: DiagnosticsResult, path: str | Path | None,
                         data_name: str | None) -> str:
    """:meth:`DiagnosticsResult.to_markdown`."""
    warning = diag.mixing_warning(data_name=data_name)
    lines = ["## Posterior diagnostics", "", diag.headline() + ".", "",
             *([f"> **Warning**: {warning}", ""] if warning else []), diag.flag_text(), "",
             "### Settings", "",
             *md_table(["setting", "value"],
                       list(diag.settings_block(data_name=data_name).items())),
             ""]
    if diag.posterior_k is not None:
        lines += ["### Posterior of the number of classes", "",
                  *md_table(["K", "p(K | y)"], [[str(k), f"{p:.3f}"]
                                                 for k, p in diag.posterior_k.items()]),
                  ""]
    lines += ["### Summary after relabelling", "",
              *md_table(["parameter", *COLUMNS],
                         [[name, *cells] for name, cells in _rows(diag)]), ""]
    for key, image in diag.figure_pngs().items():
        if path is None:
            target = data_uri(image)
        else:
            file = write_bytes(
                Path(path).with_name(f"{Path(path).stem}-{key.replace('_', '-')}.png"), image)
            target = file.name
        lines += [f"![{key}]({target})", "", f"*{CAPTIONS[key]}*", ""]
    lines.append("**Versions**: " + "; ".join(f"{k} = {fmt_setting(v)}"
                                              for k, v in versions().items()))
    text = "\n".join(lines)
    if path is not None:
        write_text(path, text)
    return text
