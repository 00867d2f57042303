"""Installing things into a machine, written once (in the spirit of pypa/installer's
``install(source, destination)``).

- ``core.py``: the walk every install takes. An ``Installable`` says what it would stage
  (``StagedFiles``) and how to check it once written; ``install_component`` stages it in a staging
  area it is handed, plans, asks, applies one transaction, verifies with one policy (a failed check
  rolls the transaction back) and returns one frozen ``Applied``.
- The Installables: ``tensile.py`` (rocBLAS Tensile files), ``graft.py`` (host-library grafts),
  ``rccl/install.py`` (an RCCL side by side), ``patches.py`` (a Python package's file),
  ``hooks.py`` (the apt hook).
- ``extract.py``: an artifact's manifest members, extracted once into the cache.
- ``pipeline.py``: ``install()``, the whole ``rocmrevive install`` over every copy and library:
  its steps (``tensile.install_copy``, ``graft.graft_library``) return frozen outcomes
  (``report.py``) and the report is built once from them.

    from rocmrevive.install.pipeline import install
    from rocmrevive.install.run import InstallOptions
    report = install(Root("/"), InstallOptions(check=True))
"""
