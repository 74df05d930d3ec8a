"""behaviorci: file-first CI checks of LLM behavior, compatible with BehaviorCI 0.1.0 bundles.

A bundle (bundle.yaml) names a prompt template, a JSONL dataset of cases and an output contract (a JSON
schema and invariants); each case's prompt goes to a provider (openai, anthropic or mock), every answer is
checked against the contract, and thresholds over the results decide the verdict.

- ``bundle``, ``models``, ``dataset``   loading and validating everything before any call
- ``invariants``                        the safe expression evaluator (an ``ast`` allow-list, never ``eval``)
- ``providers``                         openai/anthropic over ``routedriver.llm``, and the mock
- ``runner``, ``cache``, ``evaluate``   bounded-concurrency runs, the on-disk answer cache, contract checks
- ``thresholds``, ``results``           metrics and the verdict
- ``reporters``                         console, json, markdown, junit, GitHub annotations and step summary
- ``app``                               what the CLI (``routedriver.cli.behaviorci``) calls
"""
