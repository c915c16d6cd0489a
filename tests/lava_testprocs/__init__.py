"""Lava Processes and networks used only by tests/test_lava_*.py.

They live in their own package because Lava's compiler executes every module in the directory (and
parent package) of a Process's module while it searches for ProcessModels: a Process defined in a test
file would make it execute every test module.
"""
