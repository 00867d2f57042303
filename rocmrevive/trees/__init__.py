"""ROCm installs and every rocBLAS copy on a machine (AMD's tree, Debian's, Python wheels,
bundles), their versions and the GPU targets their Tensile folders serve; and the survey that
joins them with the hardware for ``detect`` and ``doctor``. Nothing here prints or exits.

    from rocmrevive.trees.survey import survey
    s = survey(Root("/"), pythons=["/home/alice/venv/bin/python"])
"""
