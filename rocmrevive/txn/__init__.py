"""Transactions: apply a plan to a ROCm tree with a journal, backups, atomic renames and a lock;
roll it back byte for byte; recover one a crash interrupted (docs/transactions.md).

    from rocmrevive.txn.plan import Plan, FileChange
    from rocmrevive.txn.transaction import apply_plan, rollback, recover_pending, find_pending, list_transactions
"""
