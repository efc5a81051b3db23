"""Evaluation harness: datasets, metrics, retrievers, methods, runner and report.

Every method is run side by side under one model on LoCoMo and MSC; see
``chronomem bench --help`` and BENCHMARKS.md ("Evaluation harness").
"""
