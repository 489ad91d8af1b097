"""The benchmarks' figures: the legend of the learning curve sits outside the axes, clear of the tick labels."""

from __future__ import annotations

from helpers import load_benchmark


def test_learning_curve_legend_is_outside_the_axes(tmp_path, monkeypatch):
    curve = [{"steps": s, "sampled_mean_score": 5.0 * k, "deterministic_score": 4.0 * k,
              "sampled_win_rate": min(1.0, k / 10)} for k, s in enumerate(range(100_000, 1_600_000, 100_000))]
    fig = load_benchmark("learning", monkeypatch).plot_curve(curve, "ppo on the default map", tmp_path / "learning.png")
    assert (tmp_path / "learning.png").stat().st_size > 0
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    for ax in fig.axes:  # the axes with their tick labels and axis labels
        assert not box.overlaps(ax.get_tightbbox(renderer)), (box, ax.get_tightbbox(renderer))
