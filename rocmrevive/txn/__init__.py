"""Transactions: apply a plan to a ROCm tree with a journal, backups, atomic renames and a lock;
roll it back byte for byte; recover one a crash interrupted (docs/transactions.md).

    from rocmrevive.txn.plan import Plan, FileChange      # what to change
    from rocmrevive.txn.apply import apply_plan           # preflight.py checks, journal.py records
    from rocmrevive.txn.undo import rollback, recover_pending
    from rocmrevive.txn.state import DEFAULT_STATE_DIR, find_pending, require_no_pending
    from rocmrevive.txn.history import list_transactions
"""
