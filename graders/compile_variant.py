"""compile_variant.py compiles argv[1] to bytecode at argv[2], recording
argv[3] as its file name, so that every variant's code objects name
the same file.
"""

import py_compile, sys
py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile=sys.argv[3], doraise=True,
                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
