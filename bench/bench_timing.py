"""Timing shared by the Python benchmarks."""
import statistics
import time


def median_s(reps, run, sync=lambda: None):
    """Median seconds of `reps` calls of run() (each followed by sync()), after one untimed
    warm-up call."""
    run()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)
