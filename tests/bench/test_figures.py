"""The figures, drawn from the results kept in bench-results/ (copied to a temporary folder): one per section,
950 px wide, the machine read from the results; ``scatterx plot`` draws them."""

import pathlib
import shutil

import pytest

from scatterx.bench import figures, text
from scatterx.cli import main

pytest.importorskip("matplotlib")
PIL = pytest.importorskip("PIL.Image")
RESULTS = pathlib.Path(__file__).resolve().parents[2] / "bench-results"


def _size(path):
    with PIL.open(path) as image:
        return image.size


def test_plot_draws_a_figure_per_section_of_the_saved_bench(tmp_path, capsys):
    shutil.copy(RESULTS / "cpu" / "bench.json", tmp_path)
    assert main(["plot", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    for name, least_rows in (("forward", 10), ("forward-backward", 6), ("message-passing", 4), ("drop-in", 28)):
        width, height = _size(tmp_path / f"{name}.png")
        assert f"wrote {tmp_path / name}.png" in printed
        assert width == 950 and 150 + 25 * least_rows < height < 300 + 40 * least_rows, (name, height)


def test_plot_draws_the_grid_from_its_csv_and_the_gnn_runs_together(tmp_path):
    shutil.copytree(RESULTS / "grid", tmp_path / "grid")
    written = figures.plot_dir(str(tmp_path / "grid"))
    assert [pathlib.Path(p).name for p in written] == ["grid-sizes.png", "grid-elements.png"]
    shutil.copytree(RESULTS / "gnn", tmp_path / "gnn")
    (written,) = figures.plot_dir(str(tmp_path / "gnn"))
    assert pathlib.Path(written).name == "epochs.png" and _size(written)[0] == 950


def test_machine_names_the_cpu_and_its_vector_extension():
    env = {"cpu": "AMD EPYC", "numba_cpu_target": "znver3 (avx2, avx, sse4.2)", "torch_threads": "2"}
    assert figures.machine(env) == "AMD EPYC, znver3 (AVX2), 2 threads"
    assert figures.machine({"cpu": "x86_64"}) == "x86_64 CPU (model not recorded)"
    line = (
        "environment: scatterx 0.1.0, torch 2.13.0+cpu, cpu AMD EPYC, numba_cpu_target znver3 (avx2, avx, "
        "sse4.2), torch_threads 2, other processes 0% of a core"
    )
    assert text.read_environment_line(line)["numba_cpu_target"] == "znver3 (avx2, avx, sse4.2)"


def test_plot_refuses_a_folder_without_results(tmp_path):
    with pytest.raises(SystemExit, match=r"holds no bench\.json"):
        main(["plot", str(tmp_path)])
