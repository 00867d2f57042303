"""Host libraries (librocsolver.so, librocsparse.so, ...): will a library from another build load
on this machine? A static ABI check from the ELF files alone (``abi.check_library``), the loader's
search emulated under a root (``loader``), and the dynamic-linking facts of one file (``elfdyn``).
"""
