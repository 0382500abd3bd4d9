"""The suite's data model: typed readers of a cell's files, the kernel rules, the design checks
and the row builder.

Run a module as ``PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.<module> ...``; each runnable
module has its own ``main()``.
"""
