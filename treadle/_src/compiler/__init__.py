"""The compiler: source capture, frontend (AST -> typed IR), IR passes, C++/CUDA emitters, kernel and function instances."""
