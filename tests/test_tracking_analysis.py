import math

from mcp_server.tracking.analysis import analyse_series


def series(values, start=0):
    return [(start + i, v) for i, v in enumerate(values)]


def test_healthy_falling_loss_has_no_flags():
    report, flags = analyse_series("loss", series([3.0, 2.5, 2.1, 1.8, 1.6, 1.5, 1.4, 1.35]))
    assert flags == [] and report.trend == "falling" and report.best_step == 7 and report.min == 1.35


def test_nan_is_flagged_with_its_step():
    _, flags = analyse_series("loss", series([2.0, 1.9, math.nan, 1.8]))
    assert len(flags) == 1 and "became nan at step 2" in flags[0]


def test_divergence_above_the_starting_value():
    _, flags = analyse_series("loss", series([2.0, 1.8, 2.2, 2.5, 3.1, 4.0]))
    assert any("diverging" in f for f in flags)


def test_plateau():
    report, flags = analyse_series("loss", series([3.0, 2.0, 1.5, 1.5, 1.501, 1.5, 1.499, 1.5]))
    assert report.trend == "flat" and any("plateau" in f for f in flags)


def test_accuracy_best_is_the_maximum():
    report, flags = analyse_series("mean_token_accuracy", series([0.1, 0.3, 0.5, 0.45]))
    assert report.best_step == 2 and report.max == 0.5 and flags == []


def test_a_flat_tail_at_the_end_of_the_schedule_is_not_called_a_plateau():
    """The last logs of a cosine schedule move little because the learning rate is near 0: the flag says so and
    points at first → last, instead of 'more steps are unlikely to help at this learning rate'."""
    losses = [7.9, 7.7, 7.6, 7.5, 7.45, 7.41, 7.40, 7.39, 7.385, 7.383]
    rates = {i: 0.01 * 0.5 * (1 + math.cos(math.pi * i / 10)) for i in range(10)}
    _, flags = analyse_series("loss", series(losses), rates)
    assert len(flags) == 1 and "the schedule's end, not a plateau" in flags[0] and "7.9 → 7.383" in flags[0]
    _, flat = analyse_series("loss", series(losses), {i: 0.01 for i in range(10)})  # constant rate: a plateau
    assert "more steps are unlikely to help" in flat[0]
