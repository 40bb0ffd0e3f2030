"""The go/no-go gate: validation jobs' output in, a GO or NO-GO verdict with reasons out."""
