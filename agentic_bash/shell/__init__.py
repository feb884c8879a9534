"""The language: lexer, parser, AST, expansion, arithmetic, interpreter, shell builtins."""
