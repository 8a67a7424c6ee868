"""trex-eval's benchmarks as inspect_ai tasks, graded by trex-eval's own judge (docs/inspect.md).

* :mod:`.registry`: inspect_ai's entry point; registers ``trex_eval/<benchmark>`` and
  ``trex_eval/<suite>`` tasks (imports inspect_ai);
* :mod:`.tasks`: the task of one set of ``trex-eval run`` flags: dataset, solver, scorer
  (imports inspect_ai);
* :mod:`.grading`: the run's preparation, the process's warm sandbox pool and the run's judge
  (imports nothing from inspect_ai);
* :mod:`.importer`: an inspect log as a trex-eval run directory (``trex-eval import``; imports
  inspect_ai when called).

This package imports nothing on its own: inspect_ai is needed only by the modules that say so,
installed by the ``integrations`` extra (``pip install 'trex-eval[integrations]'``).
"""
