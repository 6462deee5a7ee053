"""asv benchmarks of gpureplay: trace loading (``bench_traces``) and replay speed (``bench_replay``)."""
