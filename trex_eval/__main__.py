from trex_eval.cli import main

main()
