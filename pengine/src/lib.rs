//! pengine: Pacemaker transition planning as a pure pipeline (CIB in; graph, summary and DOT out).
//!
//! No I/O here: no clock, no environment, no processes. "Now" is an input.
