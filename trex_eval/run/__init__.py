"""The run stage: :mod:`.spec` (what a run is, how this process runs it), :mod:`.pipeline`
(generate -> store -> extract -> execute -> grade -> store, resumable), :mod:`.regrade` (stored
completions graded again), :mod:`.audit` (the benchmarks' own reference solutions),
:mod:`.progress` (progress bars) and :mod:`.provenance` (what a run ran with)."""
