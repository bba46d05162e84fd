//! highlander-examples: runnable examples and the sample CIBs they read (see `examples/cibs/`).
