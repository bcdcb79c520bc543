"""Pure decisions of the reconcilers: gathered state in, a typed decision out.

Nothing here reads the API server or the clock; every input is an argument, so each
decision is exercised by the table-driven cases in ``tests/unit/controller/cases``.
"""
