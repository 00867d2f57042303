"""Tensile libraries as rocBLAS ships them: the msgpack ``.dat`` files (``dat``) and the lookup
from the lazy index to placeholders, code objects and kernels (``xref``; docs/formats.md §5).

    from rocmrevive.tensile.xref import cross_reference
    report = cross_reference(Path(".../rocblas/library"), TargetId.parse("gfx906"))
"""
