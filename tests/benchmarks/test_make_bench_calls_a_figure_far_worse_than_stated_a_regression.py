"""``make bench`` compares each figure with the one docs/performance.md states: more than
30 % worse (lower-is-better or higher-is-better, as the docs say) is a regression; a
figure the docs do not state is named so; and every figure the benchmarks compare is
stated in the docs."""

from __future__ import annotations

import ast
from pathlib import Path

from benchmarks import compare

DOCS = f"""# Performance

## Something else

| `not.this` | 1 | lower |

{compare.SECTION}

| figure | stated | better |
|---|---|---|
| `dws2jgf.whole.s` | 1.8 | lower |
| `lifecycle.ratio` | 0.50 | higher |
| `api.gets_per_s` | 2,100 | higher |

## Reproduce
"""


def test_the_docs_table_is_read_with_its_directions() -> None:
    stated = compare.stated_figures(DOCS)
    assert set(stated) == {"dws2jgf.whole.s", "lifecycle.ratio", "api.gets_per_s"}
    assert stated["api.gets_per_s"] == compare.Stated(2100.0, lower_is_better=False)
    assert stated["dws2jgf.whole.s"].lower_is_better


def test_more_than_thirty_percent_worse_is_a_regression_either_way() -> None:
    stated = compare.stated_figures(DOCS)
    measured = {
        "dws2jgf.whole.s": 2.4,  # 33 % slower
        "lifecycle.ratio": 0.40,  # 20 % lower: within the band
        "api.gets_per_s": 1400.0,  # 33 % fewer
        "new.figure": 3.0,
    }
    verdicts = {v.key: v for v in compare.compare(measured, stated)}
    assert verdicts["dws2jgf.whole.s"].regression
    assert not verdicts["lifecycle.ratio"].regression
    assert verdicts["api.gets_per_s"].regression
    assert verdicts["new.figure"].stated is None
    lines = compare.lines(list(verdicts.values()))
    assert lines[0].startswith("REGRESSION") and lines[1].startswith("REGRESSION")
    assert any(line.startswith("NOT STATED  new.figure") for line in lines)
    assert any(line.startswith("ok          lifecycle.ratio") for line in lines)


def test_a_figure_better_than_stated_is_no_regression() -> None:
    stated = compare.stated_figures(DOCS)
    [verdict] = compare.compare({"dws2jgf.whole.s": 0.9}, stated)
    assert not verdict.regression and verdict.worse_by is not None and verdict.worse_by < 0


def test_every_figure_make_bench_compares_is_stated_in_the_docs() -> None:
    source = (Path(compare.__file__).parent / "__main__.py").read_text()
    keys = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "figures":
            key = node.slice
            if isinstance(key, ast.Constant):
                keys.add(key.value)
            elif isinstance(key, ast.JoinedStr):  # f"fanout.{nodes}.s" and the like
                keys.add(
                    "".join(p.value if isinstance(p, ast.Constant) else "*" for p in key.values)
                )
    stated = set(compare.stated_figures(compare.DOCS.read_text()))
    assert keys
    for key in keys:
        pattern = key.split("*")
        assert any(s.startswith(pattern[0]) and s.endswith(pattern[-1]) for s in stated), (
            f"{key} is compared but docs/performance.md states no figure for it"
        )
