//! The conformance harness against Pacemaker 2.1.5's scheduler corpus: find the corpus, classify
//! its cases into feature families, run a candidate `crm_simulate`-like binary on each, compare
//! its summary, graph, DOT and scores with the expected files, and keep the list of passing cases.
//!
//! Shared by the `conformance` test (the corpus run and its command line) and the
//! `conformance_harness` test (the harness's own tests). The planner is a black box here: only
//! its command line is used.

pub mod compare;
pub mod corpus;
pub mod families;
pub mod passing;
pub mod report;
pub mod run;
